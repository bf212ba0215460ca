"""Clustering keys, permutations and clustered tables: sort, Z-order and Hilbert.

Pipeline, per batch of at most ``batch_rows`` rows (memory stays bounded by the batch
plus the output key; see "Memory" below)::

    column values --normalize--> uint64 normalized keys           (normalize.py)
        --mapping--> one coordinate of ``bits`` bits per dimension
             "direct": the key's high ``bits`` bits (+1; 0 is NULL)
             "rank":   bucket id among range bounds (0 is NULL), stretched linearly
                       over 0 .. 2**bits - 1                       (bounds.py)
        --curve--> key: Z-order interleaves the coordinates' bits, most significant
                   first, dimension 0 first in every group; Hilbert first applies
                   Skilling's transpose (AIP Conf. Proc. 707, 2004), then interleaves
    keys --stable argsort--> permutation --take--> clustered table

Bits: a key has ``key_bits`` bits (default 64), so each of the ``k`` dimensions gets
``bits = min(64, key_bits // k)``. A key of at most 64 bits is returned as a 1-D
``uint64`` array; a wider one as a 2-D ``(n, words)`` ``uint64`` array, most
significant word first (compare rows word by word; ``np.lexsort(keys.T[::-1])``).

Guarantees: with one dimension the Z-order and Hilbert keys are non-decreasing in the
value; with several, the Z-order key is non-decreasing in each dimension while the
others are fixed (Hilbert keys are not monotone, but consecutive Hilbert indexes are
neighbouring cells). NULLs come first in every dimension, NaN after +inf, -0.0 equals
+0.0. Keys are weakly ordered (values sharing a cell share the key); the permutation
is stable, so rows with equal keys keep their input order.

"direct" takes the *high* bits of a value at its type's own width: full resolution for
narrow types (int16 in 32 bits), but an ``int64`` column whose values are small (keys
1..200,000) has identical high 32 bits everywhere and does not cluster at all with a
64-bit key over two columns; strings cluster by their first ``bits / 8`` bytes. "rank"
does not have these problems; it costs a sample and a binary search per value.

Memory: keys are computed per batch (the normalized keys and coordinates of one batch
are temporaries); the output key is ``8 * words`` bytes per row and the stable argsort
another 8 bytes per row (plus its scratch), so sorting is O(n) memory. Inputs larger
than memory are clustered per file group by the dataset layer (each group sorted on
its own, with bounds fitted once for all groups so keys agree).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa

from .._native import layout as _k
from ..errors import InvalidOptionError, SchemaError
from ..interop.arrow import as_table  # the one input normalization of rcfmt
from ..schema.arrow_io import take
from .bounds import DEFAULT_NUM_BUCKETS, DEFAULT_SAMPLE_SIZE, MAX_NUM_BUCKETS, PreparedBounds, check_int, range_bounds
from .normalize import column_type, normalize, prepare

__all__ = [
    "CURVES",
    "MAPPINGS",
    "DEFAULT_KEY_BITS",
    "cluster_keys",
    "cluster_order",
    "cluster",
    "fit_bounds",
    "curve_keys",
    "sort_keys",
    "to_signed",
    "bits_per_dimension",
]

CURVES = ("zorder", "hilbert", "sort")
MAPPINGS = ("rank", "direct")


def check_curve(curve, mapping) -> None:
    """InvalidOptionError unless ``curve`` and ``mapping`` are ones rcfmt clusters by
    (checked whether or not the call clusters: a misspelt curve is never ignored)."""
    if curve not in CURVES or mapping not in MAPPINGS:
        raise InvalidOptionError(f"curve must be one of {CURVES} and mapping one of {MAPPINGS}, got "
                                 f"{curve!r} and {mapping!r}")
DEFAULT_KEY_BITS = 64
#: rows normalized at a time
BATCH_ROWS = 1 << 16
MAX_DIMS = _k.MAX_DIMS


# ----------------------------------------------------------------------------- validation
def _check_by(table: pa.Table, by) -> list[str]:
    if isinstance(by, str):
        by = [by]
    if not isinstance(by, Sequence) or not by:
        raise InvalidOptionError(f"by must be a non-empty list of column names, got {by!r}")
    by = list(by)
    for name in by:
        if not isinstance(name, str) or name not in table.column_names:
            raise SchemaError(f"unknown clustering column {name!r}; the table has {table.column_names}")
    if len(set(by)) != len(by):
        raise InvalidOptionError(f"clustering columns repeat: {by}")
    if len(by) > MAX_DIMS:
        raise InvalidOptionError(f"at most {MAX_DIMS} clustering columns, got {len(by)}")
    return by


def _check_choice(name: str, value, choices) -> str:
    if value not in choices:
        raise InvalidOptionError(f"{name} must be one of {choices}, got {value!r}")
    return value


def bits_per_dimension(k: int, key_bits: int = DEFAULT_KEY_BITS) -> int:
    """Bits per dimension of a ``key_bits``-bit curve key over ``k`` columns."""
    key_bits = check_int("key_bits", key_bits, 1, 64 * MAX_DIMS)
    if key_bits < k:
        raise InvalidOptionError(f"key_bits={key_bits} leaves no bit for each of {k} columns")
    return min(64, key_bits // k)


def to_signed(keys: np.ndarray) -> np.ndarray:
    """``int64`` keys with the same order as unsigned ``keys`` (sign bit flipped), for
    engines without unsigned 64-bit integers (Spark's LongType)."""
    keys = np.asarray(keys, dtype=np.uint64)
    return (keys ^ np.uint64(1 << 63)).view(np.int64)


# ----------------------------------------------------------------------------- bounds
def fit_bounds(table, by, *, num_buckets: int = DEFAULT_NUM_BUCKETS, sample_size: int = DEFAULT_SAMPLE_SIZE,
               seed: int = 0, bounds: Mapping | None = None) -> dict[str, pa.Array]:
    """Range bounds of every column of ``by`` (those given in ``bounds`` are kept)."""
    table = as_table(table)
    by = _check_by(table, by)
    given = _bounds_map(by, bounds)
    return {name: given[name] if name in given else
            range_bounds(table.column(name), num_buckets, sample_size, seed) for name in by}


def _bounds_map(by: list[str], bounds) -> dict:
    if bounds is None:
        return {}
    if isinstance(bounds, Mapping):
        unknown = set(bounds) - set(by)
        if unknown:
            raise InvalidOptionError(f"bounds given for columns not clustered by: {sorted(unknown)}")
        return dict(bounds)
    if isinstance(bounds, Sequence) and not isinstance(bounds, (str, bytes)) and len(bounds) == len(by):
        return {name: b for name, b in zip(by, bounds) if b is not None}
    raise InvalidOptionError("bounds must be a dict column -> bounds, or a list with one entry per column")


# ----------------------------------------------------------------------------- keys
class _Dim:
    """One clustering column: its normalization and mapping to coordinates."""

    def __init__(self, table: pa.Table, name: str, mapping: str, bits: int, bounds):
        self.ctype = column_type(table.schema.field(name).type)
        self.mapping = mapping
        self.bits = bits
        self.bounds = PreparedBounds(bounds, self.ctype) if mapping == "rank" else None
        if self.bounds is not None and self.bounds.max_id > MAX_NUM_BUCKETS:
            raise InvalidOptionError(f"column {name!r}: {len(self.bounds)} bounds exceed {MAX_NUM_BUCKETS - 1}")

    def coords_into(self, arr: pa.Array, out: np.ndarray, scratch: np.ndarray) -> None:
        norm = normalize(prepare(arr, self.ctype), self.ctype)
        if self.mapping == "direct":
            _k.direct_coords_into(norm.key, norm.valid, self.bits, out)
        else:
            self.bounds.ids_into(norm, scratch)
            _k.stretch_into(scratch, self.bounds.max_id, self.bits, out)


def _resolve(table, by, curve, mapping, num_buckets, sample_size, seed, bounds, key_bits):
    table = as_table(table)
    by = _check_by(table, by)
    curve = _check_choice("curve", curve, CURVES)
    mapping = _check_choice("mapping", mapping, MAPPINGS)
    num_buckets = check_int("num_buckets", num_buckets, 1, MAX_NUM_BUCKETS - 1)
    if mapping == "rank":
        all_bounds = fit_bounds(table, by, num_buckets=num_buckets, sample_size=sample_size, seed=seed,
                                bounds=bounds)
    else:
        if bounds:
            raise InvalidOptionError('bounds apply to mapping="rank" only')
        all_bounds = {name: None for name in by}
    if curve == "sort":
        bits, words = 64, len(by)
    else:
        bits = bits_per_dimension(len(by), key_bits)
        words = -(-(bits * len(by)) // 64)
    return table, by, curve, mapping, all_bounds, bits, words


def cluster_keys(table, by, curve: str = "zorder", mapping: str = "rank", *,
                 num_buckets: int = DEFAULT_NUM_BUCKETS, sample_size: int = DEFAULT_SAMPLE_SIZE, seed: int = 0,
                 bounds: Mapping | Sequence | None = None, key_bits: int = DEFAULT_KEY_BITS,
                 batch_rows: int = BATCH_ROWS) -> np.ndarray:
    """Clustering key of every row of ``table`` over the columns ``by``.

    ``curve``: "zorder", "hilbert" or "sort" (one 64-bit word per column: the
    coordinates side by side; lexicographic up to the mapping's resolution).
    ``mapping``: "rank" (buckets among range bounds; ``bounds`` maps column names --
    or gives a list, one per column -- to precomputed bounds, the others are computed
    from a sample of ``sample_size`` rows with ``seed`` into ``num_buckets`` buckets)
    or "direct" (the high bits of order-preserving bytes). ``key_bits``: total bits of a
    curve key. Returns ``uint64`` of shape ``(n,)`` if the key has at most 64 bits,
    else ``(n, words)`` (most significant word first).
    """
    table, by, curve, mapping, all_bounds, bits, words = _resolve(
        table, by, curve, mapping, num_buckets, sample_size, seed, bounds, key_bits)
    batch_rows = check_int("batch_rows", batch_rows, 1)
    n = table.num_rows
    dims = [_Dim(table, name, mapping, bits, all_bounds[name]) for name in by]
    k = len(dims)
    key = np.zeros((n, words), np.uint64)
    cap = min(batch_rows, max(n, 1))
    coords = np.empty((k, cap), np.uint64)
    scratch = np.empty(cap, np.uint64)
    start = 0
    for batch in table.select(by).to_batches(max_chunksize=batch_rows):
        m = batch.num_rows
        if m == 0:
            continue
        c = coords[:, :m] if m == cap else np.empty((k, m), np.uint64)
        for d, dim in enumerate(dims):
            dim.coords_into(batch.column(d), c[d], scratch[:m])
        _curve_into(curve, np.ascontiguousarray(c), bits, key[start : start + m])
        start += m
    return key.reshape(n) if words == 1 else key


def _curve_into(curve: str, coords: np.ndarray, bits: int, out: np.ndarray) -> None:
    if curve == "zorder":
        _k.zorder_into(coords, bits, out)
    elif curve == "hilbert":
        _k.hilbert_into(coords, bits, out)
    else:  # sort: coordinates side by side
        out[:] = coords.T


def curve_keys(coords, bits: int, curve: str = "zorder") -> np.ndarray:
    """Z-order or Hilbert index of integer coordinates (shape ``(k, n)``, each below
    ``2**bits``): ``(n,)`` uint64 when ``k * bits <= 64`` (the index in the high bits),
    else ``(n, words)``. The building block of :func:`cluster_keys`, for tests and tools."""
    coords = np.ascontiguousarray(coords, dtype=np.uint64)
    if coords.ndim != 2 or not 1 <= coords.shape[0] <= MAX_DIMS:
        raise InvalidOptionError(f"coords must have shape (k, n) with 1 <= k <= {MAX_DIMS}")
    bits = check_int("bits", bits, 1, 64)
    if bits < 64 and coords.size and int(coords.max()) >> bits:
        raise InvalidOptionError(f"coordinates do not fit in {bits} bits")
    _check_choice("curve", curve, ("zorder", "hilbert"))
    k, n = coords.shape
    words = -(-(k * bits) // 64)
    out = np.zeros((n, words), np.uint64)
    _curve_into(curve, coords, bits, out)
    return out.reshape(n) if words == 1 else out


def _argsort(key: np.ndarray) -> np.ndarray:
    if key.ndim == 1:
        return np.argsort(key, kind="stable").astype(np.int64, copy=False)
    return np.lexsort(key.T[::-1]).astype(np.int64, copy=False)


# ----------------------------------------------------------------------------- exact sort
def sort_keys(table, by) -> list[np.ndarray]:
    """Exact lexicographic sort keys of ``by`` for ``np.lexsort`` (most significant
    first; reverse before passing): per column a NULL flag (NULL first) and the exact
    order (normalized key; two words for wide decimals; a dense rank for strings)."""
    import pyarrow.compute as pc  # (on first use: 25 ms of imports)

    table = as_table(table)
    by = _check_by(table, by)
    out = []
    for name in by:
        column = table.column(name)
        ctype = column_type(column.type)
        column = prepare(column, ctype)
        n = len(column)
        flag = np.ones(n, np.uint8)
        if column.null_count:
            flag = pc.is_valid(column).to_numpy(zero_copy_only=False).astype(np.uint8)
        out.append(flag)
        if ctype.kind == "null":
            continue
        nulls = flag == 0 if column.null_count else None
        if ctype.search == "bytes":
            rank = pc.rank(column, sort_keys="ascending", tiebreaker="dense")
            rank = np.array(rank.to_numpy(zero_copy_only=False), dtype=np.uint64)
            if nulls is not None:
                rank[nulls] = 0  # NULL slots must tie, or the sort is not stable
            out.append(rank)
            continue
        key = np.empty(n, np.uint64)
        lo = np.empty(n, np.uint64) if ctype.search == "u128" else None
        start = 0
        for chunk in (column.chunks if isinstance(column, pa.ChunkedArray) else [column]):
            m = len(chunk)
            if m:
                norm = normalize(chunk, ctype)
                key[start : start + m] = norm.key
                if lo is not None:
                    lo[start : start + m] = norm.lo
            start += m
        if nulls is not None:  # values under NULL slots are arbitrary
            key[nulls] = 0
            if lo is not None:
                lo[nulls] = 0
        out.append(key)
        if lo is not None:
            out.append(lo)
    return out


def cluster_order(table, by, curve: str = "zorder", mapping: str = "rank", **options) -> np.ndarray:
    """Stable permutation (``int64`` row indices) that clusters ``table`` by ``by``.

    ``curve="sort"`` is the exact lexicographic order of the values (NULL first, NaN
    after +inf, -0.0 equal to +0.0, strings bytewise; ``mapping`` is ignored). Other
    curves sort by :func:`cluster_keys` (same ``options``). Ties keep input order."""
    table = as_table(table)
    if curve == "sort":
        _check_choice("mapping", mapping, MAPPINGS)
        keys = sort_keys(table, by)
        if table.num_rows == 0:
            return np.empty(0, np.int64)
        return np.lexsort(keys[::-1]).astype(np.int64, copy=False)
    return _argsort(cluster_keys(table, by, curve, mapping, **options))


def cluster(table, by, curve: str = "zorder", mapping: str = "rank", **options) -> pa.Table:
    """``table`` with its rows reordered by :func:`cluster_order` (same rows, same
    schema and metadata)."""
    table = as_table(table)
    order = cluster_order(table, by, curve, mapping, **options)
    return take(table, pa.array(order))
