"""Building bitmap indexes (docs/FORMAT.md section 6b) while a file is written: which
chunks get one and of which kind (:class:`BitmapPolicy`), and the entry bytes
(:func:`propose`).

"auto" (the default) proposes, per chunk, the cheapest index that can answer
comparisons: equality-encoded for a handful of distinct values, bit-sliced for an
integer-like column with a narrow value range, whichever is smaller when both apply.
It proposes none for a chunk whose statistics already answer everything (a single
value, all NULL), whose rows are sorted (its page index skips as well), or whose index
would exceed :data:`AUTO_CHUNK_SHARE` of the chunk's own stored pages: a comparison on a
dictionary-coded or bit-packed column is answered by scanning those pages natively, so
an index must be much smaller than them to pay for its bytes (uniformly spread values
never are: 7 keys cost 6 bits per row where their codes take 3, before compression).
The writer then keeps auto-proposed indexes of a block while they fit
:data:`AUTO_BUDGET` of the block's bytes, equality indexes first, each kind smallest
first (:func:`within_budget`); columns named explicitly are always indexed where their
type allows.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa

from ...runtime.records import record
from ...encodings.base import ColumnValues
from ...encodings.dictionary import code_counts, take as take_values
from ...errors import InvalidOptionError, SchemaError
from .layout import BITSLICED, EQUALITY, RANGE, encode_entry, encode_keys, encode_mask
from ...schema.types import LogicalType, PhysicalKind
from ..._native import bitmaps as _bitmaps
from ...schema.arrow_io import to_arrow

__all__ = ["BitmapPolicy", "Proposal", "propose", "within_budget", "supported_kinds", "dictionary_keys", "key_counts",
           "AUTO_BUDGET", "AUTO_CHUNK_SHARE"]

#: auto indexes of a block together take at most this fraction of the block's bytes
AUTO_BUDGET = 1 / 20
#: auto: an index is proposed only when its estimated bytes are at most this share of
#: the chunk's own stored pages (the bytes a native scan would read instead)
AUTO_CHUNK_SHARE = 1 / 2
#: auto: equality-encoded only up to this many distinct values in a chunk
AUTO_EQUALITY_MAX_KEYS = 32
#: auto: bit-sliced only up to this many slices (value range < 2^32)
AUTO_MAX_SLICES = 32
#: auto: chunks with fewer rows get no index (their pages are read whole anyway)
AUTO_MIN_ROWS = 4096
#: named equality/range indexes hold at most this many keys (beyond, the chunk has none)
MAX_KEYS = 1 << 16
#: ... and range-encoded ones this many (each of its bitmaps may be dense)
MAX_RANGE_KEYS = 1024

_KINDS = ("equality", "range", "bitsliced", "auto")


def _integer_like(ltype: LogicalType) -> bool:
    return ltype.is_integer or ltype.name in ("date32", "timestamp", "decimal128")


def supported_kinds(ltype: LogicalType) -> tuple[str, ...]:
    if _integer_like(ltype):
        return ("equality", "range", "bitsliced")
    return ("equality", "range")


class BitmapPolicy:
    """Which chunks get a bitmap index, from the ``bitmap_indexes`` write option:
    "auto" (every column, where it pays), None / {} (none), or a dict of column name ->
    "equality" | "range" | "bitsliced" | "auto" (those columns; a named kind is always
    built where the chunk allows it)."""

    def __init__(self, option, schema: pa.Schema, types: dict, element_columns=frozenset()):
        self.auto_all = option == "auto"
        self.named: dict[str, str] = {}
        if self.auto_all or option is None:
            return
        if not isinstance(option, dict):
            raise InvalidOptionError("bitmap_indexes must be 'auto', None or a dict of column name -> "
                                     f"one of {_KINDS}, got {option!r}")
        for name, kind in option.items():
            if name not in types:
                raise SchemaError(f"bitmap_indexes names unknown column {name!r}; columns: {schema.names}")
            if kind not in _KINDS:
                raise InvalidOptionError(f"bitmap index kind for {name!r} must be one of {_KINDS}, got {kind!r}")
            if name in element_columns:
                raise InvalidOptionError(f"column {name!r} holds list elements; bitmap indexes cover rows")
            if kind != "auto" and kind not in supported_kinds(types[name]):
                raise InvalidOptionError(f"a {kind} bitmap index cannot index column {name!r} of type {types[name]}")
            self.named[name] = kind

    def requested(self, name: str) -> str | None:
        """The kind asked for a column ("auto" or a kind), or None."""
        if name in self.named:
            return self.named[name]
        return "auto" if self.auto_all else None


@record(frozen=True)
class Proposal:
    """A chunk's index: its kind (None: no index) and why, its size in bytes (built, or
    estimated for an auto proposal not built yet) and ``build()`` giving its entry."""

    kind: str | None
    reason: str
    named: bool  # asked for by name (kept whatever its size)
    size: int = 0
    build: Callable[[], bytes] | None = None


def _none(reason: str, named: bool = False) -> Proposal:
    return Proposal(None, reason, named)


def _built(kind: str, reason: str, named: bool, entry: bytes) -> Proposal:
    return Proposal(kind, reason, named, len(entry), lambda: entry)


# ------------------------------------------------------------------ the chunk's values
class _Chunk:
    """One chunk's values prepared for indexing (computed once, shared by the kinds)."""

    def __init__(self, values: ColumnValues, valid, ltype: LogicalType, dictionary=None):
        self.values, self.ltype = values, ltype
        self.dictionary = dictionary  # the writer's (codes per slot, distinct values), if it built one
        self.rows = rows = len(values)
        self.valid = np.ones(rows, bool) if valid is None else np.asarray(valid, bool)
        self.nonnan = self.valid
        self.nans = None
        if ltype.is_float:
            isnan = np.isnan(values.values) & self.valid
            self.nans = isnan
            self.nonnan = self.valid & ~isnan
        self._codes = None
        self._frame = None

    def null_containers(self) -> tuple[bytes, bytes | None]:
        return encode_mask(~self.valid), None if self.nans is None else encode_mask(self.nans)

    def codes(self):
        """``(keys, codes)``: the distinct non-null, non-NaN values ascending (stats
        domain) and per row its key number (-1 for NULL and NaN rows)."""
        if self._codes is None:
            if self.dictionary is not None and _reusable(self.ltype):
                self._codes = self._from_dictionary()
            else:
                keys, sub = _key_codes(self.values, self.nonnan, self.ltype)
                codes = np.full(self.rows, -1, np.int64)
                codes[self.nonnan] = sub
                self._codes = keys, codes
        return self._codes

    def _from_dictionary(self):
        """Keys and codes from the writer's dictionary: its entries used by non-null
        rows (null slots may hold values of their own), ranked in key order."""
        dcodes, dvalues = self.dictionary
        every = bool(self.nonnan.all())
        used = np.flatnonzero(np.bincount(dcodes if every else dcodes[self.nonnan], minlength=len(dvalues)))
        if self.ltype.kind == PhysicalKind.VARBINARY:
            data, offsets = bytes(np.ascontiguousarray(dvalues.values).view(np.uint8)), dvalues.offsets.tolist()
            values = [data[offsets[i] : offsets[i + 1]] for i in used.tolist()]
        else:
            values = np.asarray(dvalues.values)[used].tolist()
        order = sorted(range(len(used)), key=values.__getitem__)
        rank = np.full(len(dvalues), -1, np.int64)
        rank[used[order]] = np.arange(len(order))
        codes = rank[dcodes]
        if not every:
            codes[~self.nonnan] = -1
        return [values[i] for i in order], codes

    def frame(self):
        """``(base, step, top)`` with every non-null value ``base + step * u`` for an
        integer ``0 <= u <= top`` (:meth:`units` gives each row's ``u``), or None for
        values beyond 64 bits (wide decimals). Cheap: an auto proposal asks it of every
        integer chunk, and most never build the index."""
        if self._frame is None:
            numbers = _integers(self.values, self.ltype)
            if numbers is None:
                self._frame = (None,)
            else:
                live = numbers if bool(self.valid.all()) else numbers[self.valid]
                if not len(live):
                    self._frame = (0, 1, 0)
                else:
                    base, top = int(live.min()), int(live.max())
                    step = _step(live, base) if top > base else 1
                    self._frame = (base, step, (top - base) // step)
        return None if self._frame[0] is None else self._frame

    def units(self) -> np.ndarray:
        """Each row's ``u`` of :meth:`frame` (uint64; arbitrary in null rows)."""
        base, step, _ = self.frame()
        diff = _integers(self.values, self.ltype).astype(np.uint64) - np.uint64(base & 0xFFFF_FFFF_FFFF_FFFF)
        return diff // np.uint64(step) if step > 1 else diff


def _reusable(ltype: LogicalType) -> bool:
    """Types whose dictionary entries are their keys (floats are not: -0.0 and NaN
    payloads are entries of their own)."""
    return ltype.kind == PhysicalKind.VARBINARY or ltype.is_integer or ltype.name in ("date32", "timestamp")


def _step(live: np.ndarray, base: int) -> int:
    """The greatest common divisor of the offsets of ``live`` (non-null int64/uint64
    values) from their minimum ``base`` (1 when they are all 0): asked of a sample
    first, which is 1 for most columns, and checked on every value before it is
    trusted."""
    origin = np.uint64(base & 0xFFFF_FFFF_FFFF_FFFF)
    sample = np.gcd.reduce(live[:: max(1, len(live) // 1024)].astype(np.uint64) - origin)
    if sample <= 1:
        return 1
    diff = live.astype(np.uint64) - origin
    if not (diff % sample).any():
        return int(sample)
    return int(np.gcd.reduce(diff)) or 1


# ------------------------------------------------------------------ values as keys
def _key_codes(values: ColumnValues, valid: np.ndarray, ltype: LogicalType):
    """``(keys, codes)``: the distinct values of the rows in ``valid`` ascending (as
    stats-domain values) and each such row's key number."""
    if ltype.kind == PhysicalKind.VARBINARY:
        import pyarrow.compute as pc  # (on first use: 25 ms of imports)

        arr = to_arrow(values, None, ltype.storage).filter(pa.array(valid))  # (annotated: keys as stored)
        encoded = pc.dictionary_encode(arr)
        dictionary = encoded.dictionary
        order = pc.sort_indices(dictionary).to_numpy()
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        codes = rank[encoded.indices.to_numpy(zero_copy_only=False)]
        keys = dictionary.take(pa.array(order)).to_pylist()
        if ltype.is_string:
            keys = [k.encode("utf-8") for k in keys]
        return keys, codes
    v = values.values[valid]
    if ltype.name == "decimal128":
        pairs = np.ascontiguousarray(v).view("<u8").reshape(-1, 2)
        sortable = np.empty(len(v), [("hi", "<i8"), ("lo", "<u8")])
        sortable["hi"], sortable["lo"] = pairs[:, 1].view("<i8"), pairs[:, 0]
        uniq, codes = np.unique(sortable, return_inverse=True)
        keys = [(int(h) << 64) | int(lo) for h, lo in zip(uniq["hi"].tolist(), uniq["lo"].tolist())]
        return keys, codes.reshape(-1)
    if ltype.is_float:
        v = v + v.dtype.type(0.0)  # -0.0 and +0.0 are one key (+0.0)
    uniq, codes = np.unique(v, return_inverse=True)
    return uniq.tolist(), codes.reshape(-1)


def key_counts(dictionary, valid) -> np.ndarray:
    """Rows per entry of the writer's ``dictionary`` ``(codes per slot, distinct values)``,
    non-null rows only (null slots may hold values of their own)."""
    codes, distinct = dictionary
    return code_counts(codes, len(distinct), valid)


def dictionary_keys(dictionary, counts: np.ndarray, ltype: LogicalType, limit: int) -> list | None:
    """The distinct non-null, non-NaN values of a chunk (stats domain, ascending, as an
    equality index's keys) from the writer's ``dictionary`` and its :func:`key_counts`.
    None when there are more than ``limit``, and for annotated types (a dictionary holds
    their storage values, which the dataset's value sets would compare with literals of
    the Arrow type: a float16 column failed so; their equality indexes report keys of
    their own)."""
    if ltype.annotated:
        return None
    used = np.flatnonzero(counts)
    if len(used) > limit + 1:  # (+1: a NaN entry is dropped below)
        return None
    entries = take_values(dictionary[1], used.astype(np.uint32), ltype)
    live = np.ones(len(used), bool)
    if ltype.is_float:
        live = ~np.isnan(entries.values)
    keys, _ = _key_codes(entries, live, ltype)
    return keys if len(keys) <= limit else None


def _integers(values: ColumnValues, ltype: LogicalType) -> np.ndarray | None:
    """The values as int64/uint64 numbers (decimals: when every unscaled value fits in
    int64), or None."""
    v = values.values
    if ltype.name == "decimal128":
        pairs = np.ascontiguousarray(v).view("<u8").reshape(-1, 2)
        lo = pairs[:, 0].view("<i8")
        if not (pairs[:, 1].view("<i8") == (lo >> 63)).all():
            return None
        return lo
    if ltype.name == "bool":
        return v.view(np.uint8)
    return v


# ------------------------------------------------------------------ entries
#: equality indexes of at most this many keys are written with numpy (measured: faster
#: up to ~10 keys on 131,072 random rows, 10x slower at 50)
NUMPY_KEYS = 8


def _equality(chunk: _Chunk, key_limit: int) -> bytes | None:
    keys, codes = chunk.codes()
    d = len(keys)
    if d > key_limit:
        return None
    counts = np.bincount(codes[codes >= 0], minlength=d)
    implied = int(np.argmax(counts)) if d else None  # the biggest bitmap is left out
    if d <= NUMPY_KEYS:  # a vectorized pass per key beats one scalar pass over all
        bitmaps = [encode_mask(codes == k) for k in range(d) if k != implied]
    else:  # every key's container in two native passes (as encode_mask decides up to 64 keys)
        out, _ = _bitmaps.equality_containers(np.ascontiguousarray(codes, np.int64), d, implied, d <= 64)
        bitmaps = [out.tobytes()]
    nulls, nans = chunk.null_containers()
    return encode_entry(EQUALITY, chunk.rows, encode_keys(EQUALITY, chunk.ltype, keys), d, nulls, nans, bitmaps,
                        implied)


def _range(chunk: _Chunk, key_limit: int) -> bytes | None:
    keys, codes = chunk.codes()
    if len(keys) > key_limit:
        return None
    live = codes >= 0
    bitmaps = [encode_mask(live & (codes <= k)) for k in range(len(keys))]
    nulls, nans = chunk.null_containers()
    return encode_entry(RANGE, chunk.rows, encode_keys(RANGE, chunk.ltype, keys), len(keys), nulls, nans, bitmaps)


def _bitsliced(chunk: _Chunk, slice_limit: int) -> bytes | None:
    frame = chunk.frame()
    if frame is None:
        return None
    base, step, top = frame
    width = top.bit_length()
    if width > slice_limit:
        return None
    u = chunk.units()
    has_nulls = not chunk.valid.all()
    bitmaps = []
    for j in range(width):
        mask = ((u >> np.uint64(j)) & np.uint64(1)).astype(bool)
        if has_nulls:
            mask &= chunk.valid
        bitmaps.append(encode_mask(mask))
    nulls, _ = chunk.null_containers()
    return encode_entry(BITSLICED, chunk.rows, encode_keys(BITSLICED, chunk.ltype, (base, step)), width, nulls,
                        None, bitmaps)


def _estimate_equality(rows: int, distinct: int, ltype: LogicalType, counts: np.ndarray | None = None) -> int:
    """Bytes of an equality index of ``distinct`` keys (the most frequent left out):
    each key's rows as positions (4 bytes each) or a dense bitmap, whichever is smaller;
    from the writer's dictionary's :func:`key_counts` when given, else as if evenly
    spread."""
    dense = (rows + 7) >> 3
    if counts is not None:
        counts = np.sort(counts[counts > 0])[:-1]
        keys = int(np.minimum(4 * counts, dense).sum()) + 5 * len(counts)
    else:
        keys = max(distinct - 1, 0) * (min(dense, 4 * rows // max(distinct, 1)) + 5)
    return keys + distinct * (ltype.width or 16) + 32


def propose(values: ColumnValues, valid, ltype: LogicalType, request: str, *, distinct: int | None,
            is_sorted: bool | None, dictionary=None, counts: np.ndarray | None = None,
            chunk_bytes: int | None = None) -> Proposal:
    """The index of one chunk (null slots of ``values`` already filled) for a
    ``request`` of "auto" or a kind named by the user: built now when named; for auto,
    its size estimated and its building deferred until the block's budget keeps it.
    ``dictionary``: the writer's ``(codes, values)`` of the chunk, reused for keys, and
    ``counts`` its :func:`key_counts`; ``chunk_bytes``: the chunk's stored pages (auto: see :data:`AUTO_CHUNK_SHARE`)."""
    named = request != "auto"
    chunk = _Chunk(values, valid, ltype, dictionary)
    rows = chunk.rows
    if named:
        if request == "bitsliced":
            entry = _bitsliced(chunk, 64)
            if entry is None:
                return _none("bitsliced: decimal values beyond 64 bits", True)
            return _built("bitsliced", "named", True, entry)
        build, limit = (_equality, MAX_KEYS) if request == "equality" else (_range, MAX_RANGE_KEYS)
        entry = build(chunk, limit)
        if entry is None:
            return _none(f"{request}: {len(chunk.codes()[0])} distinct values exceed {limit}", True)
        return _built(request, "named", True, entry)
    if rows < AUTO_MIN_ROWS:
        return _none("auto: too few rows")
    if not chunk.nonnan.any():
        return _none("auto: no values (statistics answer)")
    if distinct is not None and distinct <= 1:
        return _none("auto: one value (statistics answer)")
    if is_sorted:
        return _none("auto: sorted (the page index answers)")
    candidates = []
    if distinct is not None and distinct <= AUTO_EQUALITY_MAX_KEYS:
        candidates.append((_estimate_equality(rows, distinct, ltype, counts), 0, "equality",
                           lambda: _equality(chunk, MAX_KEYS)))  # (``distinct`` may be an estimate)
    if _integer_like(ltype) and (frame := chunk.frame()) is not None:
        width = frame[2].bit_length()
        if width <= AUTO_MAX_SLICES:
            candidates.append((width * (((rows + 7) >> 3) + 5) + 40, 1, "bitsliced",
                               lambda: _bitsliced(chunk, AUTO_MAX_SLICES)))
    if not candidates:
        return _none("auto: too many distinct values for an equality index, no narrow integer range")
    size, _, kind, build = min(candidates, key=lambda c: (c[0], c[1]))
    if chunk_bytes is not None and size > AUTO_CHUNK_SHARE * chunk_bytes:
        return _none("auto: over half the bytes of the chunk's pages (a native scan of them costs less)")
    return Proposal(kind, f"auto: {kind}, the smallest that answers comparisons", False, size, build)


def within_budget(proposals: list[Proposal | None], block_bytes: int) -> list[bool]:
    """Which of a block's proposals to keep: every named one, and auto ones while all
    auto entries together stay within :data:`AUTO_BUDGET` of the block's bytes --
    equality indexes first (their conjunctions are what statistics cannot answer),
    then bit-sliced ones, each kind smallest first."""
    keep = [p is not None and p.build is not None and p.named for p in proposals]
    budget = int(block_bytes * AUTO_BUDGET)
    auto = sorted((p.kind != "equality", p.size, i) for i, p in enumerate(proposals)
                  if p is not None and p.build is not None and not p.named)
    spent = 0
    for _, size, i in auto:
        if spent + size <= budget:
            spent += size
            keep[i] = True
    return keep
