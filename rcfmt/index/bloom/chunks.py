"""Per-chunk bloom filters in the file: which chunks get one, how they are stored, and
how a scan probes them for ``==`` and ``isin`` leaves.

Stored form (docs/FORMAT.md, "Bloom filters"): the SBBF bitset of
:mod:`rcfmt.index.bloom.sbbf` followed by a u32 crc32 of the bitset; the chunk record's
``bloom_offset``/``bloom_length`` (bitset + 4) locate it in the bloom region.
"""
from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from ...encodings.base import ColumnValues
from ...errors import ChecksumError, CorruptFileError, InvalidOptionError
from ...schema.types import LogicalType, PhysicalKind
from .sbbf import MIN_BYTES, BloomFilter, hash_binary, hash_fixed, hash_values, optimal_num_bytes, within_fpp
from ...predicate.nnf import BoundListContains, Cmp, Folded, InSet

__all__ = ["BloomCandidate", "BloomPolicy", "build_filter", "chunk_hashes", "filter_bits", "fold", "read_filter", "can_probe",
           "may_contain"]

DEFAULT_FPP = 0.01
#: "auto" filters of a block together take at most this share of the block's stored
#: bytes; the smallest filters (fewest distinct values: keys, dates) are kept first
AUTO_BLOCK_SHARE = 0.03
#: an "auto" filter may be halved (down to this false-positive rate) to fit what is left
AUTO_MAX_FPP = 0.10
AUTO_MIN_ROWS = 1024


class BloomCandidate(NamedTuple):
    """A chunk's filter before its block decides to keep it; ``ndv`` and ``bits`` None
    when the writer left it out unbuilt (:meth:`BloomPolicy.hopeless`)."""

    column: str
    #: the distinct count that sized it ...
    ndv: int | None
    #: the bitset, :meth:`BloomPolicy.filter_size` bytes
    bits: bytes | None
    #: ... and whether that count is a HyperLogLog estimate (else exact)
    estimated: bool


def _eligible_type(ltype: LogicalType) -> bool:
    return ltype.kind != PhysicalKind.BOOL and not ltype.is_float


class BloomPolicy:
    """Which chunks get a bloom filter.

    ``columns="auto"`` (default): unsorted chunks without a dictionary (dictionary
    chunks answer ``==`` from their dictionary page) of integer-like, string and binary
    columns, each sized for ``fpp`` from its distinct count (exact when the writer built a
    dictionary, else a HyperLogLog estimate). Per block, filters are kept smallest first
    while all together stay within :data:`AUTO_BLOCK_SHARE` of the block's bytes; one that
    does not fit is halved while its false-positive rate stays <= :data:`AUTO_MAX_FPP`.
    So key-like columns get filters and long free text (millions of distinct values, as
    large as a key column's whole chunk) does not. A list of names: exactly those
    columns, sized for ``fpp``, always kept. ``None``/``[]``: no filters.
    """

    def __init__(self, columns="auto", fpp: float = DEFAULT_FPP, schema_names=()):
        if not (isinstance(fpp, float) and 0.0 < fpp < 1.0):
            raise InvalidOptionError(f"bloom_filter_fpp must be a float in (0, 1), got {fpp!r}")
        self.fpp = fpp
        self.auto = columns == "auto"
        if self.auto or columns is None:
            self.named = frozenset()
        else:
            columns = list(columns) if isinstance(columns, Iterable) and not isinstance(columns, (str, bytes, dict)) \
                else None  # (once: an iterator is read once)
            if columns is None or not all(isinstance(c, str) for c in columns):
                raise InvalidOptionError("bloom_filter_columns must be 'auto', None or a list of column names")
            unknown = [c for c in columns if c not in schema_names]
            if unknown:
                from ...errors import SchemaError

                raise SchemaError(f"bloom_filter_columns names unknown columns {unknown}; columns: {list(schema_names)}")
            self.named = frozenset(columns)

    def wants(self, name: str, ltype: LogicalType, rows: int, is_dictionary: bool, is_sorted: bool | None) -> bool:
        """Whether a chunk is a candidate for a filter (named, or eligible for auto)."""
        if rows == 0:
            return False
        if name in self.named:
            return True
        return (self.auto and _eligible_type(ltype) and not is_dictionary and not is_sorted
                and rows >= AUTO_MIN_ROWS)

    def filter_size(self, ndv: int) -> int:
        """Bytes of a filter for ``ndv`` distinct values at the policy's ``fpp``."""
        return optimal_num_bytes(max(int(ndv), 1), self.fpp)

    def keep(self, candidates: list, block_bytes: int) -> list:
        """Per chunk of a block, the stored filter (bitset + crc32) or None.
        ``candidates``: per chunk None or a :class:`BloomCandidate`; named columns are
        kept as built, auto ones within the block's share (see the class), halved by
        folding where that lets them fit."""
        out: list = [None] * len(candidates)
        budget = int(block_bytes * AUTO_BLOCK_SHARE)
        auto = []
        for i, c in enumerate(candidates):
            if c is None or c.bits is None:
                continue
            if c.column in self.named:
                out[i] = _stored(c.bits)
            else:
                auto.append((len(c.bits), i, c.ndv, c.bits))
        for size, i, ndv, bits in sorted(auto, key=lambda a: (a[0], a[1])):
            if size > budget:  # halve to the largest power of two within the budget, if still good enough
                fits = 1 << (budget.bit_length() - 1) if budget >= MIN_BYTES else 0
                if not fits or not within_fpp(fits, ndv, AUTO_MAX_FPP):
                    continue
                size = fits
            budget -= size
            out[i] = _stored(fold(bits, size))
        return out

    def hopeless(self, candidate: BloomCandidate, block_bytes: int) -> bool:
        """Whether an auto candidate could not be kept even alone in its block: folded
        to the smallest size whose false-positive rate stays <= :data:`AUTO_MAX_FPP`, it
        still exceeds the block's whole share. The writer does not hash that column's
        next chunks for a while (:class:`rcfmt.file.writer.Writer`)."""
        if candidate.column in self.named or candidate.bits is None:
            return False
        size = len(candidate.bits)
        while size > MIN_BYTES and within_fpp(size // 2, candidate.ndv, AUTO_MAX_FPP):
            size //= 2
        return size > int(block_bytes * AUTO_BLOCK_SHARE)


def fold(bits: bytes, num_bytes: int) -> bytes:
    """The bitset of a filter of ``num_bytes`` (a power of two <= ``len(bits)``) holding
    what ``bits`` holds: a hash's block is the top bits of its upper half, so halving the
    block count maps blocks ``2k`` and ``2k + 1`` onto ``k`` (their words OR-ed); the bits
    inside a block depend on the hash alone. The same bits as inserting anew."""
    words = np.frombuffer(bits, dtype="<u4")
    while len(words) * 4 > num_bytes:
        words = (words.reshape(-1, 2, 8)[:, 0] | words.reshape(-1, 2, 8)[:, 1]).reshape(-1)
    return words.tobytes()


def _stored(bits: bytes) -> bytes:
    return bits + zlib.crc32(bits).to_bytes(4, "little")


def chunk_hashes(values: ColumnValues, valid, ltype: LogicalType, dictionary=None, counts=None) -> np.ndarray:
    """The hashes a chunk's filter holds: of its non-null values, or, given the writer's
    ``(codes per row, distinct values)``, of the distinct values non-null rows use (a
    duplicate would set the same bits); ``counts``: those rows per entry, when known."""
    if dictionary is not None:
        codes, distinct = dictionary
        if counts is None:  # (the writer's kernels: a reader probing filters loads none of them)
            from ...encodings.dictionary import code_counts

            counts = code_counts(codes, len(distinct), valid)
        return _hashes(distinct, None, ltype)[counts > 0]
    return _hashes(values, valid, ltype)


def filter_bits(hashes: np.ndarray, num_bytes: int) -> bytes:
    """The bitset of a ``num_bytes`` filter holding ``hashes``."""
    bf = BloomFilter(num_bytes)
    bf.insert_hashes(hashes)
    return bf.to_bytes()


def _hashes(values: ColumnValues, valid, ltype: LogicalType) -> np.ndarray:
    if ltype.kind == PhysicalKind.VARBINARY:
        h = hash_binary(np.ascontiguousarray(values.offsets, dtype=np.int64), values.values)
    else:
        h = hash_fixed(np.ascontiguousarray(values.values))
    return h if valid is None else h[valid]


def build_filter(values: ColumnValues, valid, ltype: LogicalType, num_bytes: int, dictionary=None) -> bytes:
    """The stored form (bitset + crc32) of a filter holding the chunk's non-null values
    (``dictionary``: as for :func:`chunk_hashes`)."""
    return _stored(filter_bits(chunk_hashes(values, valid, ltype, dictionary), num_bytes))


def read_filter(file, block: int, column: int, buf=None, base: int = 0) -> BloomFilter | None:
    """The chunk's bloom filter, or None if it has none. ``buf`` may hold already read
    bytes of the file from offset ``base`` on, the filter's among them."""
    rec = file.footer.chunks[column][block]
    length = int(rec["bloom_length"])
    if not length:
        return None
    name = file.footer.columns[column].name
    offset = int(rec["bloom_offset"])
    if buf is not None and base <= offset and offset + length <= base + len(buf):
        raw = bytes(memoryview(buf)[offset - base : offset - base + length])
    else:
        raw = file.read_range(offset, length)
    bits, crc = raw[:-4], int.from_bytes(raw[-4:], "little") if length >= 4 else None
    if crc is None or (file.verify_checksums and zlib.crc32(bits) != crc):
        raise ChecksumError("bloom filter checksum mismatch", path=file.path, column=name, block=block,
                            offset=int(rec["bloom_offset"]))
    try:
        return BloomFilter.from_bytes(bits)
    except CorruptFileError as exc:
        raise exc.with_context(path=file.path, column=name, block=block) from None


def can_probe(leaf) -> bool:
    """Leaves a bloom filter can refute: ``==``, (not negated) ``isin`` and
    ``list_contains`` (on the filter of the list's elements)."""
    if isinstance(leaf, BoundListContains):
        return not leaf.negated and can_probe(leaf.element)
    if isinstance(leaf, Cmp):
        return leaf.op == "==" and _eligible_type(leaf.column.ltype)
    if isinstance(leaf, InSet):
        return not leaf.negated and len(leaf.values) > 0 and _eligible_type(leaf.column.ltype)
    return False


def may_contain(bf: BloomFilter, leaf) -> bool:
    """False only if the chunk certainly holds no row where ``leaf`` is TRUE."""
    if isinstance(leaf, BoundListContains):
        leaf = leaf.element
    if isinstance(leaf, Folded):  # (decided by types: NaN against a float, -1 against a uint64)
        return bool(leaf.value)
    members = [leaf.value] if isinstance(leaf, Cmp) else list(leaf.values)
    return bool(bf.might_contain_hashes(hash_values(members, leaf.column.ltype)).any())
