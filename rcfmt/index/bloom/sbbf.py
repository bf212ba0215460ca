"""Split-block bloom filters (SBBF) for pruning blocks on ``==`` and ``isin``.

A bloom filter answers "may this block hold value v?": False means it certainly does
not (skip the block), True means it may (keep it). Inserted values are never
reported absent; absent values are reported present with probability about ``fpp``.

Wire format (normative)
=======================

The layout, block selection and bit masks are Parquet's split-block bloom filter
(SBBF) with XXH64, without Parquet's Thrift header. For int32, int64, uint32, uint64,
date32, timestamp, float32 (except -0.0), float64 (except -0.0), string and binary
columns the bytes are identical to the bitset parquet-cpp writes for the same values
(tested); int8/int16/uint8/uint16, bool and decimal128 differ because Parquet hashes
its physical types (INT32, FIXED_LEN_BYTE_ARRAY big-endian) and rcfmt hashes each
value at its own width.

**Bytes.** A filter is ``num_bytes`` bytes, a power of two with
``32 <= num_bytes <= 1 MiB`` (``MIN_BYTES``, ``MAX_BYTES``): ``num_blocks =
num_bytes / 32`` blocks of 256 bits, each block eight little-endian uint32 words.
Word ``w`` (0..7) of block ``b`` is at byte offset ``32*b + 4*w``; bit ``k`` of a word
is ``1 << k``. There is no header: the length is the size of the filter and is stored
by whatever refers to the filter. A reader rejects any other length as corrupt.

**Hash input.** ``hash = XXH64(bytes, seed=0)`` of the value's canonical bytes in the
column's storage representation (see :mod:`rcfmt.schema.types`), always little-endian:

==============================  ===================================================
type                            bytes hashed
==============================  ===================================================
int8/uint8 .. int64/uint64      the value at its own width: 1, 2, 4 or 8 bytes
float32, float64                the IEEE 754 bits (4 or 8 bytes); -0.0 is hashed as
                                +0.0 (they are ``==``); NaN is never inserted and
                                never probed (NaN equals nothing)
bool                            1 byte: 0x00 or 0x01
date32                          int32 days since 1970-01-01 (4 bytes)
timestamp(unit, tz)             int64 units since the epoch, in the column's unit (8)
decimal128(p, s)                the unscaled value, 16 bytes two's complement
string                          the UTF-8 bytes, no length prefix, no terminator
binary                          the raw bytes
==============================  ===================================================

Nulls are never inserted. A probe value must first be converted to the column's
storage type (an int literal probed on an int16 column is hashed as 2 bytes, a
timestamp literal in the column's unit); a literal that the column cannot represent
cannot match and needs no probe.

**Insert / probe.** With ``SALT = [0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d,
0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31]`` and all arithmetic on unsigned
integers::

    block   = ((hash >> 32) * num_blocks) >> 32          # 64-bit product
    key     = uint32(hash)                               # low 32 bits
    bit[i]  = uint32(key * SALT[i]) >> 27                # 32-bit wrapping product, 0..31
    insert: word[i] of block |= 1 << bit[i]              for i in 0..7
    probe:  present  iff  all eight bits are set

**Sizing** (not part of the format, any valid size can be read): for ``ndv``
distinct values and target false-positive probability ``fpp``,
``num_bits = -8 * ndv / ln(1 - fpp ** (1/8))``, truncated to an integer, rounded up
to a power of two and clamped to ``[MIN_BYTES, max_bytes]`` (same as Parquet, which
clamps at 128 MiB). Example: ``ndv=1000, fpp=0.01`` gives 9,681 bits -> 2,048 bytes.

**Worked example.** A 64-byte filter (two blocks) holding the int32 value 42:

- hashed bytes ``2a 00 00 00``; ``hash = XXH64 = 0xd756d7b62fc50bf1``
- ``block = (0xd756d7b6 * 2) >> 32 = 1``; ``key = 0x2fc50bf1``
- ``bit[0] = uint32(0x2fc50bf1 * 0x47b6137b) >> 27 = 0xe7e59fcb >> 27 = 28``; all
  eight: ``bit = [28, 12, 27, 4, 5, 12, 29, 30]``
- words of block 1: ``[0x10000000, 0x00001000, 0x08000000, 0x00000010,
  0x00000020, 0x00001000, 0x20000000, 0x40000000]``; block 0 stays zero
- filter bytes::

      00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00   block 0, words 0-3
      00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00   block 0, words 4-7
      00 00 00 10 00 10 00 00  00 00 00 08 10 00 00 00   block 1, words 0-3
      20 00 00 00 00 10 00 00  00 00 00 20 00 00 00 40   block 1, words 4-7

The example is checked by ``tests/index/test_bloom.py``.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ...errors import CorruptFileError, InvalidOptionError
from ..._native import bloom as _k

__all__ = [
    "BloomFilter",
    "MIN_BYTES",
    "MAX_BYTES",
    "SALT",
    "hash_fixed",
    "hash_binary",
    "hash_scalar",
    "hash_arrow",
    "hash_values",
    "optimal_num_bytes",
    "expected_fpp",
    "within_fpp",
    "estimate_distinct",
]

MIN_BYTES = 32
MAX_BYTES = 1 << 20
BLOCK_BYTES = 32
SALT = (0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31)

_WORD = np.dtype("<u4")
_HASH = np.dtype(np.uint64)


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def optimal_num_bytes(ndv: int, fpp: float = 0.01, max_bytes: int = MAX_BYTES) -> int:
    """Size in bytes of a filter for ``ndv`` distinct values at false-positive rate ``fpp``.

    ``-8 * ndv / ln(1 - fpp ** (1/8))`` bits, truncated to an integer, rounded up to a
    power of two, clamped to ``[MIN_BYTES, max_bytes]``: Parquet's rule (with its own
    maximum of 128 MiB).
    """
    if isinstance(ndv, bool) or not isinstance(ndv, (int, np.integer)) or ndv < 0:
        raise InvalidOptionError(f"ndv must be a non-negative integer, got {ndv!r}")
    try:
        fpp = float(fpp)
    except (TypeError, ValueError):
        raise InvalidOptionError(f"fpp must be a number in (0, 1), got {fpp!r}") from None
    if not 0.0 < fpp < 1.0:
        raise InvalidOptionError(f"fpp must be in (0, 1), got {fpp!r}")
    _check_size(max_bytes, "max_bytes")
    bits = -8.0 * int(ndv) / math.log1p(-(fpp ** 0.125))
    if not bits < max_bytes * 8:  # also catches inf / nan
        return int(max_bytes)
    num_bits = max(MIN_BYTES * 8, int(bits))  # truncated, as Parquet does
    return min(1 << (num_bits - 1).bit_length(), int(max_bytes) * 8) // 8


def expected_fpp(num_bytes: int, ndv: int) -> float:
    """Expected false-positive rate of a ``num_bytes`` filter holding ``ndv`` distinct values.

    Exact for the SBBF up to the randomness of the hash: block loads are Poisson with
    mean ``ndv / num_blocks``, and a block that received ``k`` values has each of the
    probe's eight bits set with probability ``1 - (31/32)**k``. Higher than the
    classic ``(1 - exp(-8 ndv / num_bits)) ** 8`` because blocks fill unevenly (e.g.
    0.0146 against 0.0100 at 9.68 bits per value).
    """
    _check_size(num_bytes)
    if isinstance(ndv, bool) or not isinstance(ndv, (int, np.integer)) or ndv < 0:
        raise InvalidOptionError(f"ndv must be a non-negative integer, got {ndv!r}")
    return _fpp_at_load(int(ndv) / (int(num_bytes) // BLOCK_BYTES))


def within_fpp(num_bytes: int, ndv: int, fpp: float) -> bool:
    """``expected_fpp(num_bytes, ndv) <= fpp``, decided by the load alone (distinct
    values per block, against the highest load at which the rate stays within ``fpp``,
    found once per ``fpp``): the writer asks it for every filter it sizes or folds."""
    load = int(ndv) / (int(num_bytes) // BLOCK_BYTES)
    limit = _max_load(float(fpp))
    if abs(load - limit) > 1e-9 * limit:
        return load < limit
    return _fpp_at_load(load) <= fpp  # (at the limit itself: exactly)


@functools.lru_cache(maxsize=16)
def _max_load(fpp: float) -> float:
    """The load at which :func:`expected_fpp` reaches ``fpp`` (it grows with the load)."""
    lo, hi = 0.0, 1.0
    while _fpp_at_load(hi) <= fpp and hi < 1e12:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if _fpp_at_load(mid) <= fpp else (lo, mid)
    return lo


def _fpp_at_load(lam: float) -> float:
    """:func:`expected_fpp` at ``lam`` distinct values per block."""
    if lam == 0:
        return 0.0
    # sum over k of Poisson(k; lam) * (1 - (31/32)^k)^8, over the k that carry the mass
    k = np.arange(max(0, int(lam - 12 * math.sqrt(lam) - 10)), int(lam + 12 * math.sqrt(lam) + 30))
    # log Poisson pmf: one lgamma at the first k, then log(lam / k) per step (vectorized)
    steps = np.log(lam) - np.log(k[1:].astype(np.float64))
    log_pmf = (k[0] * math.log(lam) - lam - math.lgamma(k[0] + 1)) + np.concatenate(([0.0], np.cumsum(steps)))
    return float(np.sum(np.exp(log_pmf) * (1.0 - (31 / 32) ** k) ** 8))


def _check_size(num_bytes, what="num_bytes") -> None:
    if (isinstance(num_bytes, bool) or not isinstance(num_bytes, (int, np.integer))
            or not MIN_BYTES <= num_bytes <= MAX_BYTES or not _is_power_of_two(int(num_bytes))):
        raise InvalidOptionError(
            f"{what} must be a power of two between {MIN_BYTES} and {MAX_BYTES}, got {num_bytes!r}")


def _as_hashes(hashes) -> np.ndarray:
    h = np.asarray(hashes)
    if h.dtype != _HASH:
        raise InvalidOptionError(f"hashes must be a uint64 array, got dtype {h.dtype}")
    return np.ascontiguousarray(h.reshape(-1))


class BloomFilter:
    """A split-block bloom filter; see the module docstring for the exact format.

    ``BloomFilter(num_bytes)`` makes an empty filter of that size (a power of two in
    ``[MIN_BYTES, MAX_BYTES]``); :meth:`for_distinct_count` sizes it for a number of
    distinct values; :meth:`from_bytes` reads one back.
    """

    __slots__ = ("_words",)

    def __init__(self, num_bytes: int):
        _check_size(num_bytes)
        self._words = np.zeros(int(num_bytes) // 4, dtype=_WORD)

    # ------------------------------------------------------------ constructors
    @classmethod
    def for_distinct_count(cls, ndv: int, fpp: float = 0.01, *, max_bytes: int = MAX_BYTES) -> "BloomFilter":
        """An empty filter sized for ``ndv`` distinct values at false-positive rate ``fpp``."""
        return cls(optimal_num_bytes(ndv, fpp, max_bytes))

    @classmethod
    def from_bytes(cls, buf) -> "BloomFilter":
        """Read a filter from the bytes written by :meth:`to_bytes`.

        ``buf`` is any bytes-like object (bytes, memoryview, mmap, uint8 array). It is
        not copied (so it must not change while the filter is in use) until something
        is inserted, and it is never written to. Raises
        :class:`CorruptFileError` if the length is not a power of two in
        ``[MIN_BYTES, MAX_BYTES]``.
        """
        try:
            view = memoryview(buf).cast("B")
        except TypeError:
            raise InvalidOptionError(f"expected a bytes-like object, got {type(buf).__name__}") from None
        n = view.nbytes
        if not (MIN_BYTES <= n <= MAX_BYTES and _is_power_of_two(n)):
            raise CorruptFileError(
                f"bloom filter of {n} bytes: the size must be a power of two between "
                f"{MIN_BYTES} and {MAX_BYTES}")
        self = cls.__new__(cls)
        words = np.frombuffer(view, dtype=_WORD)
        words.flags.writeable = False  # never write into the caller's buffer: copy on insert
        self._words = words
        return self

    # ------------------------------------------------------------ properties
    @property
    def num_bytes(self) -> int:
        return self._words.nbytes

    @property
    def num_blocks(self) -> int:
        return self._words.nbytes // BLOCK_BYTES

    def to_bytes(self) -> bytes:
        """The filter's bytes (the wire format)."""
        return self._words.tobytes()

    # ------------------------------------------------------------ insert / probe
    def insert_hashes(self, hashes) -> None:
        """Insert values given by their hashes (uint64 array, e.g. from :func:`hash_fixed`)."""
        h = _as_hashes(hashes)
        if not self._words.flags.writeable:
            self._words = self._words.copy()
        if _k.insert(self._words, h) < 0:  # pragma: no cover - sizes are checked on construction
            raise AssertionError("bloom filter has an invalid size")

    def might_contain_hashes(self, hashes) -> np.ndarray:
        """Bool array: False where the value certainly is not in the filter."""
        h = _as_hashes(hashes)
        out = np.empty(len(h), dtype=np.uint8)
        if _k.probe_into(self._words, h, out) < 0:  # pragma: no cover - sizes checked on construction
            raise AssertionError("bloom filter has an invalid size")
        return out.view(bool)

    def might_contain_hash(self, h: int) -> bool:
        """Scalar form of :meth:`might_contain_hashes`."""
        if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or not 0 <= int(h) < 1 << 64:
            raise InvalidOptionError(f"hash must be an integer in [0, 2**64), got {h!r}")
        return bool(self.might_contain_hashes(np.array([h], dtype=_HASH))[0])

    # ------------------------------------------------------------ misc
    def __eq__(self, other):
        if not isinstance(other, BloomFilter):
            return NotImplemented
        return np.array_equal(self._words, other._words)

    __hash__ = None

    def __repr__(self) -> str:
        bits = int(np.unpackbits(self._words.view(np.uint8)).sum())
        return f"BloomFilter(num_bytes={self.num_bytes}, bits_set={bits})"


# ---------------------------------------------------------------- hashing
def _fixed_kind(dtype: np.dtype) -> int:
    """0 raw, 1 float, 2 bool (see the kernel), or raise for unsupported dtypes."""
    if dtype.kind in "iu" and dtype.itemsize in (1, 2, 4, 8):
        return 0
    if dtype.kind == "f" and dtype.itemsize in (4, 8):
        return 1
    if dtype.kind == "b":
        return 2
    if dtype.kind == "V" and dtype.itemsize == 16 and dtype.fields is None:
        return 0
    raise InvalidOptionError(
        f"cannot hash values of dtype {dtype}: pass the column's storage dtype "
        "(bool, int8..int64, uint8..uint64, float32, float64, V16 for decimal128; "
        "date32 as <i4, timestamps as <i8)")


def hash_fixed(values) -> np.ndarray:
    """XXH64 of each value of a fixed-width numpy array, as a uint64 array.

    ``values`` has the column's storage dtype (see :mod:`rcfmt.schema.types`); big-endian
    arrays are hashed by their value, i.e. as if little-endian. Floats: -0.0 hashes
    as +0.0, every NaN as the canonical quiet NaN -- but NaN must not be inserted or
    probed (drop it first, as :func:`hash_arrow` does). Bools hash as 0x00 / 0x01.
    """
    arr = np.asarray(values)
    kind = _fixed_kind(arr.dtype)
    if arr.dtype.kind in "iuf" and arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    arr = np.ascontiguousarray(arr.reshape(-1))
    out = np.empty(len(arr), dtype=_HASH)
    status = _k.hash_fixed_into(arr.view(np.uint8), arr.dtype.itemsize, kind, out)
    if status < 0:  # pragma: no cover - dtype checked above
        raise AssertionError(f"hash_fixed_into failed with status {status}")
    return out


def hash_binary(offsets, data) -> np.ndarray:
    """XXH64 of each variable-length value ``data[offsets[i]:offsets[i+1]]``.

    ``offsets`` is an int32 or int64 array of ``n + 1`` entries (Arrow layout; it need
    not start at 0), ``data`` a bytes-like object or uint8 array. Offsets that
    decrease, are negative or point past ``data`` raise :class:`InvalidOptionError`.
    """
    off = np.asarray(offsets)
    if off.dtype.kind not in "iu" or off.dtype.itemsize not in (4, 8) or off.ndim != 1:
        raise InvalidOptionError(f"offsets must be a 1-d int32 or int64 array, got {off.dtype}")
    if off.dtype.itemsize == 8 and off.dtype.kind == "u":
        if len(off) and int(off.max()) >= 1 << 63:
            raise InvalidOptionError("offsets out of range")
    off = np.ascontiguousarray(off, dtype=np.int32 if off.dtype.itemsize == 4 and off.dtype.kind == "i"
                               else np.int64)
    if len(off) == 0:
        raise InvalidOptionError("offsets must have at least one entry")
    buf = _as_bytes(data)
    out = np.empty(len(off) - 1, dtype=_HASH)
    status = _k.hash_binary_into(off, buf, out)
    if status < 0:
        raise InvalidOptionError(
            f"invalid offsets: entry {-status - 2} is negative, decreasing or past the "
            f"end of the data ({len(buf)} bytes)")
    return out


def _as_bytes(data):
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8:
            raise InvalidOptionError(f"data must be bytes or a uint8 array, got dtype {data.dtype}")
        return np.ascontiguousarray(data.reshape(-1))
    try:
        return memoryview(data).cast("B")
    except TypeError:
        raise InvalidOptionError(f"expected a bytes-like object, got {type(data).__name__}") from None


def hash_scalar(value_bytes) -> int:
    """XXH64 (seed 0) of one value's canonical bytes, as an int.

    No normalisation is done: for a float use :func:`hash_fixed` (which maps -0.0 to
    +0.0), or pass the canonical bytes yourself.
    """
    return int(_k.xxh64(_as_bytes(value_bytes)))


def hash_arrow(array) -> np.ndarray:
    """Hashes of the non-null, non-NaN values of a pyarrow array -- what a writer inserts.

    Accepts any Arrow type rcfmt stores (see :mod:`rcfmt.schema.types`), slices, chunked
    arrays and dictionary arrays (whose dictionary values are hashed once). The
    result has one hash per such value, in order, duplicates included.
    """
    import pyarrow as pa

    if isinstance(array, pa.ChunkedArray):
        parts = [hash_arrow(chunk) for chunk in array.chunks]
        return np.concatenate(parts) if parts else np.empty(0, dtype=_HASH)
    if not isinstance(array, pa.Array):
        raise InvalidOptionError(f"expected a pyarrow Array, got {type(array).__name__}")
    if pa.types.is_dictionary(array.type):
        dict_hashes, dict_keep = _hash_positions(array.dictionary)
        valid = _validity(array)
        idx = array.indices.to_numpy(zero_copy_only=False)
        idx = idx[valid] if valid is not None else idx
        idx = idx.astype(np.intp, copy=False)
        return dict_hashes[idx[dict_keep[idx]]]
    hashes, keep = _hash_positions(array)
    return hashes[keep]


def _validity(array):
    """Bool numpy array of valid positions, or None when there are no nulls."""
    if array.null_count == 0:
        return None
    return array.is_valid().to_numpy(zero_copy_only=False)


def _hash_positions(array):
    """(hash of every position, bool mask of positions to use) for a plain Arrow array."""
    from ...schema.types import logical_type_from_arrow

    lt = logical_type_from_arrow(array.type)  # SchemaError for types rcfmt does not store
    if lt.annotated:  # hashed as stored (docs/FORMAT.md §6a)
        from ...schema.annotated import to_storage

        array, lt = to_storage(array, lt), lt.storage
    n = len(array)
    keep = np.ones(n, dtype=bool)
    valid = _validity(array)
    if valid is not None:
        keep &= valid
    if lt.name == "bool":
        values = array.fill_null(False).to_numpy(zero_copy_only=False) if n else np.empty(0, bool)
        return hash_fixed(values), keep
    if lt.name in ("string", "binary"):
        bufs = array.buffers()
        off_dtype = np.int64 if lt.large else np.int32
        offsets = np.frombuffer(bufs[1], dtype=off_dtype, count=array.offset + n + 1)[array.offset:] \
            if bufs[1] is not None else np.zeros(n + 1, dtype=off_dtype)
        data = bufs[2] if bufs[2] is not None else b""
        return hash_binary(offsets, data), keep
    dtype = lt.numpy_dtype
    buf = array.buffers()[1]
    values = (np.frombuffer(buf, dtype=dtype, count=array.offset + n)[array.offset:]
              if buf is not None else np.zeros(n, dtype=dtype))
    if lt.is_float:
        keep &= ~np.isnan(values)
    return hash_fixed(values), keep


def hash_values(values, logical_type) -> np.ndarray:
    """Hashes of probe literals given in the *stats domain* of ``logical_type``.

    For ``col == v`` / ``col.isin(vs)``: ints (numpy or Python) for integer, date32
    (days) and timestamp (units of the column) columns; floats; bools; the unscaled
    ``int`` for decimal128; ``str`` or ``bytes`` for string and binary. ``None`` and NaN
    are dropped (they equal nothing). A value the column cannot hold (an int out of
    range, a non-integral float for an int column) raises :class:`InvalidOptionError`:
    deciding that such a literal cannot match is the binder's job.
    """
    from ...schema.types import PhysicalKind

    vals = [v for v in values if v is not None and not (isinstance(v, (float, np.floating)) and v != v)]
    lt = logical_type
    if lt.kind == PhysicalKind.VARBINARY:
        blobs = []
        for v in vals:
            if isinstance(v, str):
                blobs.append(v.encode("utf-8"))
            elif isinstance(v, (bytes, bytearray, memoryview, np.bytes_)):
                blobs.append(bytes(v))
            else:
                raise InvalidOptionError(f"cannot probe a {lt.name} column with {v!r}")
        offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in blobs], out=offsets[1:])
        return hash_binary(offsets, b"".join(blobs))
    if lt.name == "decimal128":
        out = bytearray()
        for v in vals:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise InvalidOptionError(f"decimal probe values must be unscaled ints, got {v!r}")
            try:
                out += int(v).to_bytes(16, "little", signed=True)
            except OverflowError:
                raise InvalidOptionError(f"{v!r} does not fit in decimal128") from None
        return hash_fixed(np.frombuffer(bytes(out), dtype="V16"))
    dtype = lt.numpy_dtype
    if dtype.kind == "b":
        for v in vals:
            if not isinstance(v, (bool, np.bool_)):
                raise InvalidOptionError(f"cannot probe a bool column with {v!r}")
        return hash_fixed(np.array(vals, dtype=bool))
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        ints = []
        for v in vals:
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer, float, np.floating)):
                raise InvalidOptionError(f"cannot probe a {lt.name} column with {v!r}")
            if isinstance(v, (float, np.floating)):
                if not float(v).is_integer():
                    raise InvalidOptionError(f"{v!r} is not an integer ({lt.name} column)")
                v = int(v)
            if not info.min <= int(v) <= info.max:
                raise InvalidOptionError(f"{v!r} is out of range for a {lt.name} column")
            ints.append(int(v))
        return hash_fixed(np.array(ints, dtype=dtype))
    # floats
    for v in vals:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise InvalidOptionError(f"cannot probe a {lt.name} column with {v!r}")
    with np.errstate(over="ignore"):
        arr = np.array([float(v) for v in vals], dtype=dtype)
    return hash_fixed(arr)


#: HyperLogLog registers of :func:`estimate_distinct` (2**12: a standard error of 1.6%)
HLL_PRECISION = 12


def estimate_distinct(hashes: np.ndarray, precision: int = HLL_PRECISION) -> int:
    """The number of distinct values among 64-bit ``hashes`` (XXH64 of the values),
    estimated by HyperLogLog with ``2**precision`` registers: a relative standard error
    of about ``1.04 / sqrt(2**precision)`` (no bias correction: up to ~6% high around
    2.5x the register count, where linear counting hands over); linear counting for
    small counts, where it is nearly exact. Never more than ``len(hashes)``. Used to
    size bloom filters, never for answers."""
    if not 4 <= precision <= 16:
        raise InvalidOptionError(f"precision must be in [4, 16], got {precision!r}")
    h = np.ascontiguousarray(hashes, dtype=_HASH)
    if not len(h):
        return 0
    m = 1 << precision
    registers = np.zeros(m, np.uint8)
    if _k.hll_registers(h, registers) < 0:  # pragma: no cover - the precision is checked above
        raise AssertionError("hll_registers refused its registers")
    zeros = int(np.count_nonzero(registers == 0))
    alpha = 0.7213 / (1 + 1.079 / m)
    estimate = alpha * m * m / float(np.sum(np.ldexp(1.0, -registers.astype(np.int32))))
    if estimate <= 2.5 * m and zeros:
        estimate = m * math.log(m / zeros)  # linear counting
    return min(len(h), max(1, int(round(estimate))))
