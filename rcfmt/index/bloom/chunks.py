"""Per-chunk bloom filters in the file: which chunks get one, how they are stored, and
how a scan probes them for ``==`` and ``isin`` leaves.

Stored form (docs/FORMAT.md, "Bloom filters"): the SBBF bitset of
:mod:`rcfmt.index.bloom.sbbf` followed by a u32 crc32 of the bitset; the chunk record's
``bloom_offset``/``bloom_length`` (bitset + 4) locate it in the bloom region.
"""
from __future__ import annotations

import zlib

import numpy as np

from ...encodings.base import ColumnValues
from ...errors import ChecksumError, CorruptFileError, InvalidOptionError
from ...schema.types import LogicalType, PhysicalKind
from .sbbf import MIN_BYTES, BloomFilter, expected_fpp, hash_binary, hash_fixed, hash_values, optimal_num_bytes
from ...scan.nnf import BoundListContains, Cmp, InSet

__all__ = ["BloomPolicy", "build_filter", "read_filter", "can_probe", "may_contain"]

DEFAULT_FPP = 0.01
#: "auto" filters may take at most this fraction of the chunk's stored bytes ...
AUTO_MAX_FRACTION = 0.25
#: ... and are dropped when that budget cannot give at least this false-positive rate
AUTO_MAX_FPP = 0.10
AUTO_MIN_ROWS = 1024


def _eligible_type(ltype: LogicalType) -> bool:
    return ltype.kind != PhysicalKind.BOOL and not ltype.is_float


class BloomPolicy:
    """Which chunks get a bloom filter.

    ``columns="auto"`` (default): unsorted, high-cardinality chunks (no dictionary) of
    integer-like, string and binary columns, when a filter within a quarter of the
    chunk's stored size reaches a false-positive rate of 10% or better. A list of names:
    exactly those columns, sized for ``fpp``. ``None``/``[]``: no filters.
    """

    def __init__(self, columns="auto", fpp: float = DEFAULT_FPP, schema_names=()):
        if not (isinstance(fpp, float) and 0.0 < fpp < 1.0):
            raise InvalidOptionError(f"bloom_filter_fpp must be a float in (0, 1), got {fpp!r}")
        self.fpp = fpp
        self.auto = columns == "auto"
        if self.auto or columns is None:
            self.named = frozenset()
        else:
            if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
                raise InvalidOptionError("bloom_filter_columns must be 'auto', None or a list of column names")
            unknown = [c for c in columns if c not in schema_names]
            if unknown:
                from ...errors import SchemaError

                raise SchemaError(f"bloom_filter_columns names unknown columns {unknown}; columns: {list(schema_names)}")
            self.named = frozenset(columns)

    def filter_size(self, name: str, ltype: LogicalType, rows: int, ndv: int | None, stored_bytes: int,
                    is_dictionary: bool, is_sorted: bool | None) -> int | None:
        """Bytes of the filter to build for a chunk, or None for no filter."""
        if rows == 0:
            return None
        ndv = rows if ndv is None else max(ndv, 1)
        if name in self.named:
            return optimal_num_bytes(ndv, self.fpp)
        if not self.auto or not _eligible_type(ltype) or is_dictionary or is_sorted or rows < AUTO_MIN_ROWS:
            return None
        size = optimal_num_bytes(ndv, self.fpp)
        budget = max(MIN_BYTES, int(stored_bytes * AUTO_MAX_FRACTION))
        while size > budget and size > MIN_BYTES:
            size //= 2
        return size if expected_fpp(size, ndv) <= AUTO_MAX_FPP else None


def _hashes(values: ColumnValues, valid, ltype: LogicalType) -> np.ndarray:
    if ltype.kind == PhysicalKind.VARBINARY:
        h = hash_binary(np.ascontiguousarray(values.offsets, dtype=np.int64), values.values)
    else:
        h = hash_fixed(np.ascontiguousarray(values.values))
    return h if valid is None else h[valid]


def build_filter(values: ColumnValues, valid, ltype: LogicalType, num_bytes: int, dictionary=None) -> bytes:
    """The stored form (bitset + crc32) of a filter holding the chunk's non-null values.
    ``dictionary``: the chunk's ``(codes per row, distinct values)`` when the writer
    built one; then only the distinct values the non-null rows use are hashed (a
    duplicate sets the same bits: the filter is the same)."""
    bf = BloomFilter(num_bytes)
    if dictionary is not None:
        codes, distinct = dictionary
        used = np.bincount(codes if valid is None else codes[valid], minlength=len(distinct)) > 0
        bf.insert_hashes(_hashes(distinct, None, ltype)[used])
    else:
        bf.insert_hashes(_hashes(values, valid, ltype))  # duplicates set the same bits
    bits = bf.to_bytes()
    return bits + zlib.crc32(bits).to_bytes(4, "little")


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
    members = [leaf.value] if isinstance(leaf, Cmp) else list(leaf.values)
    return bool(bf.might_contain_hashes(hash_values(members, leaf.column.ltype)).any())
