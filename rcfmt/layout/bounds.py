"""Range bounds from a deterministic sample, and bucket ids ("rank" mapping).

The "rank" mapping replaces each value by its bucket among range bounds, like Delta
Lake's ``range_partition_id`` (Spark's RangePartitioner on a sample) and Hudi's
"sample" layout mode. Buckets hold (roughly) equal numbers of sampled rows, so skewed
columns, low-cardinality columns and strings with long common prefixes still spread
over the whole curve, where the "direct" mapping would pile them into a few cells.

Definitions, stated once:

- ``bounds`` is a pyarrow Array of the column's value type (dictionaries decoded),
  sorted ascending, without duplicates or NULLs. ``bounds[j]`` is the *inclusive upper
  bound* of bucket ``j + 1``.
- ``bucket_ids(column, bounds)``: 0 for NULL; otherwise ``1 + (number of bounds
  strictly below the value)``, in ``1 .. len(bounds) + 1``. The order is the one of
  :mod:`rcfmt.layout.normalize`: NaN after +inf, -0.0 equal to +0.0, strings bytewise.
- The ids depend only on the value and the bounds, so a distributed implementation
  computes bounds once from a sample (driver) and ids per row anywhere (executors):
  ``range_bounds`` = ``sample_column`` + ``bounds_from_sample``.

Example: a column with 10 distinct values and ``num_buckets=4`` over a uniform sample
``[0, 0, 1, 2, ..., 9]`` gets cut points at the 1/4, 2/4, 3/4 quantiles, e.g.
``bounds = [2, 4, 7]``, and ids ``0 -> 1, 2 -> 1, 3 -> 2, 8 -> 4, NULL -> 0``.
A column with at most ``num_buckets`` distinct sampled values gets one bucket per
value: ``bounds`` = all distinct values but the largest.
"""
from __future__ import annotations

import base64
import math

import numpy as np
import pyarrow as pa

from .._native import layout as _k
from ..errors import InvalidOptionError
from ..schema.arrow_io import take
from .normalize import ColumnType, column_type, normalize, prepare

__all__ = [
    "DEFAULT_NUM_BUCKETS",
    "DEFAULT_SAMPLE_SIZE",
    "MAX_NUM_BUCKETS",
    "range_bounds",
    "sample_column",
    "bounds_from_sample",
    "bucket_ids",
    "bounds_to_json",
    "bounds_from_json",
]

#: buckets per column of the "rank" mapping (Delta's rangeId.max is 1000)
DEFAULT_NUM_BUCKETS = 1024
#: rows sampled per column to compute bounds
DEFAULT_SAMPLE_SIZE = 100_000
#: the stretch kernel is exact for fewer than 2**32 buckets
MAX_NUM_BUCKETS = 1 << 31


def check_int(name: str, value, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo or (hi is not None and value > hi):
        bound = f" and <= {hi}" if hi is not None else ""
        raise InvalidOptionError(f"{name} must be an integer >= {lo}{bound}, got {value!r}")
    return int(value)


def _as_column(column):
    if isinstance(column, (pa.Array, pa.ChunkedArray)):
        return column
    try:
        return pa.array(column)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise InvalidOptionError(f"expected a pyarrow Array or ChunkedArray, got {type(column).__name__}: {exc}") from None


# ----------------------------------------------------------------------------- sampling
def sample_column(column, sample_size: int = DEFAULT_SAMPLE_SIZE, seed: int = 0) -> pa.Array:
    """A deterministic sample of the non-NULL values of ``column``: rows drawn without
    replacement (all rows when there are at most ``sample_size``), NULLs dropped,
    in row order. Same column, size and seed -> same sample."""
    column = _as_column(column)
    sample_size = check_int("sample_size", sample_size, 1)
    seed = check_int("seed", seed, 0)
    ctype = column_type(column.type)
    column = prepare(column, ctype)
    n = len(column)
    if n > sample_size:
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.choice(n, size=sample_size, replace=False))
        column = take(column, pa.array(idx))
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column.drop_null()


def _sorted_groups(sample: pa.Array, ctype: ColumnType) -> tuple[np.ndarray, np.ndarray]:
    """(order, group) of a NULL-free sample: ``order`` sorts it, ``group[i]`` numbers the
    distinct value at sorted position i (0, 1, ...)."""
    import pyarrow.compute as pc  # (on first use: 25 ms of imports)

    m = len(sample)
    if ctype.search == "bytes":
        order = pc.sort_indices(sample).to_numpy().astype(np.int64)
        srt = take(sample, pa.array(order))
        new = np.ones(m, bool)
        if m > 1:
            new[1:] = ~pc.equal(srt.slice(1), srt.slice(0, m - 1)).to_numpy(zero_copy_only=False)
    else:
        norm = normalize(sample, ctype)
        if ctype.search == "u128":
            order = np.lexsort((norm.lo, norm.key))
            hi, lo = norm.key[order], norm.lo[order]
            new = np.ones(m, bool)
            new[1:] = (hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])
        else:
            order = np.argsort(norm.key, kind="stable")
            key = norm.key[order]
            new = np.ones(m, bool)
            new[1:] = key[1:] != key[:-1]
    group = np.cumsum(new) - 1
    return order, group


def bounds_from_sample(sample, num_buckets: int = DEFAULT_NUM_BUCKETS) -> pa.Array:
    """Range bounds (see the module docstring) from a sample of a column's values.

    NULLs in ``sample`` are ignored. With at most ``num_buckets`` distinct values, every
    distinct value but the largest is a bound (one bucket per value); otherwise the
    bounds are the distinct values at the ``i / num_buckets`` quantiles of the sample,
    ``i = 1 .. num_buckets - 1``, without the sample's maximum -- except that a value
    filling at least one bucket's share gets a bucket of its own and the other buckets
    share the other values at equal depth (so 90% zeros do not leave only a tenth of
    the buckets to the rest). There are at most ``num_buckets - 1`` bounds.
    """
    sample = _as_column(sample)
    num_buckets = check_int("num_buckets", num_buckets, 1, MAX_NUM_BUCKETS)
    ctype = column_type(sample.type)
    sample = prepare(sample, ctype)
    if isinstance(sample, pa.ChunkedArray):
        sample = sample.combine_chunks() if sample.num_chunks != 1 else sample.chunk(0)
    sample = sample.drop_null()
    m = len(sample)
    if m == 0 or ctype.kind == "null":
        return pa.array([], type=ctype.value_type)
    order, group = _sorted_groups(sample, ctype)
    distinct = int(group[-1]) + 1
    first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])  # sorted position of each group's first row
    if distinct <= num_buckets:
        picks = first[:-1]
    else:
        picks = first[_cut_groups(group, distinct, num_buckets)]
    return take(sample, pa.array(order[picks]))


def _cut_groups(group: np.ndarray, distinct: int, num_buckets: int) -> np.ndarray:
    """Groups (distinct sorted values) whose values become bounds, at most
    ``num_buckets - 1`` of them.

    Equal-depth cuts waste buckets on a value that fills many of them (90% zeros would
    leave 10 buckets for the other values). So values holding at least one bucket's
    share are *heavy*: each gets a bucket of its own (bounds: the value and its
    predecessor, two of the budget), and the remaining buckets cut the other values at
    equal depth; repeated until no new heavy value appears."""
    counts = np.bincount(group, minlength=distinct)
    heavy = np.zeros(distinct, bool)
    while True:
        budget = num_buckets - 2 * int(heavy.sum())
        rest = int(counts[~heavy].sum())
        if budget < 3 or rest == 0:
            break
        new = ~heavy & (counts * budget >= rest)
        if not new.any() or num_buckets - 2 * int(heavy.sum() + new.sum()) < 1:
            break
        heavy |= new
    budget = max(num_buckets - 2 * int(heavy.sum()), 1)
    light = group[~heavy[group]]  # sorted groups of the rows of light values
    cuts = np.empty(0, np.int64)
    if len(light) and budget > 1:
        pos = (np.arange(1, budget, dtype=np.int64) * len(light) + budget - 1) // budget - 1
        cuts = light[pos]
    h = np.flatnonzero(heavy)
    groups = np.unique(np.concatenate([cuts, h, h[h > 0] - 1]))
    return groups[groups < distinct - 1]  # the maximum bounds nothing


def range_bounds(column, num_buckets: int = DEFAULT_NUM_BUCKETS, sample_size: int = DEFAULT_SAMPLE_SIZE,
                 seed: int = 0) -> pa.Array:
    """Range bounds of ``column`` from a deterministic sample: ``bounds_from_sample(
    sample_column(column, sample_size, seed), num_buckets)``. The result is a pyarrow
    Array (picklable; :func:`bounds_to_json` makes it JSON)."""
    return bounds_from_sample(sample_column(column, sample_size, seed), num_buckets)


# ----------------------------------------------------------------------------- bucket ids
class PreparedBounds:
    """Bounds normalized once for the bucket search of many batches."""

    def __init__(self, bounds, ctype: ColumnType):
        if not isinstance(bounds, (pa.Array, pa.ChunkedArray)):
            try:
                bounds = pa.array(list(bounds), type=ctype.value_type)
            except (pa.ArrowException, TypeError, ValueError) as exc:
                raise InvalidOptionError(f"bounds do not fit type {ctype.value_type}: {exc}") from None
        if isinstance(bounds, pa.ChunkedArray):
            bounds = bounds.combine_chunks()
        try:
            bounds = prepare(bounds, ctype)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise InvalidOptionError(f"bounds of type {bounds.type} do not fit type {ctype.value_type}: {exc}") from None
        if bounds.null_count:
            raise InvalidOptionError("bounds must not contain NULL")
        self.array = bounds
        self.ctype = ctype
        self.norm = normalize(bounds, ctype)
        self.search = ctype.search
        if self.search == "bytes" and not pa.types.is_large_string(bounds.type) and not pa.types.is_large_binary(bounds.type):
            self.norm.offsets = self.norm.offsets.astype(np.int64)
        self._check_sorted()

    def __len__(self) -> int:
        return len(self.array)

    @property
    def max_id(self) -> int:
        return len(self.array) + 1

    def _check_sorted(self) -> None:
        import pyarrow.compute as pc  # (on first use: 25 ms of imports)

        m = len(self.array)
        if m < 2:
            return
        if self.search == "u64":
            ok = bool(np.all(self.norm.key[1:] > self.norm.key[:-1]))
        elif self.search == "u128":
            hi, lo = self.norm.key, self.norm.lo
            ok = bool(np.all((hi[1:] > hi[:-1]) | ((hi[1:] == hi[:-1]) & (lo[1:] > lo[:-1]))))
        else:
            ok = bool(pc.all(pc.less(self.array.slice(0, m - 1), self.array.slice(1))).as_py())
        if not ok:
            raise InvalidOptionError("bounds must be sorted ascending without duplicates "
                                     "(NaN last, -0.0 equal to 0.0, strings bytewise)")

    def ids_into(self, norm, out: np.ndarray) -> None:
        """Bucket ids of one normalized batch into ``out`` (uint64)."""
        if self.search == "u64":
            _k.search_u64_into(norm.key, self.norm.key, norm.valid, out)
        elif self.search == "u128":
            _k.search_u128_into(norm.key, norm.lo, self.norm.key, self.norm.lo, norm.valid, out)
        else:
            _k.search_varbinary_into(norm.offsets, norm.data, self.norm.offsets, self.norm.data, norm.valid, out)


def bucket_ids(column, bounds) -> np.ndarray:
    """Bucket id of every row of ``column`` (int64): 0 for NULL, else
    ``1 + (number of bounds strictly below the value)``. ``bounds`` is what
    :func:`range_bounds` returns, or a list of values of the column's type."""
    column = _as_column(column)
    ctype = column_type(column.type)
    prepared = PreparedBounds(bounds, ctype)
    column = prepare(column, ctype)
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    out = np.empty(len(column), np.uint64)
    start = 0
    for chunk in chunks:
        n = len(chunk)
        if n:
            prepared.ids_into(normalize(chunk, ctype), out[start : start + n])
        start += n
    return out.view(np.int64)


# ----------------------------------------------------------------------------- JSON
def _float_to_json(v: float):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return 0.0 if v == 0 else v


def _float_from_json(v) -> float:
    if isinstance(v, str):
        if v in ("NaN", "Infinity", "-Infinity"):
            return float(v.replace("Infinity", "inf"))
        raise ValueError(f"malformed float {v!r}")
    return float(v)


def _type_to_json(t: pa.DataType) -> dict:
    if pa.types.is_timestamp(t):
        out = {"type": "timestamp", "unit": t.unit}
        if t.tz is not None:
            out["tz"] = t.tz
        return out
    if pa.types.is_decimal(t):
        return {"type": "decimal128", "precision": t.precision, "scale": t.scale}
    if pa.types.is_time32(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        return {"type": str(t).split("[")[0], "unit": t.unit}
    return {"type": str(t)}


_SIMPLE_TYPES = {
    str(t): t for t in (pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(),
                        pa.uint32(), pa.uint64(), pa.float32(), pa.float64(), pa.date32(), pa.date64(),
                        pa.string(), pa.large_string(), pa.binary(), pa.large_binary(), pa.null())
}


def _type_from_json(obj) -> pa.DataType:
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise ValueError(f"malformed type {obj!r}")
    name = obj["type"]
    if name in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[name]
    if name == "timestamp":
        return pa.timestamp(obj["unit"], tz=obj.get("tz"))
    if name == "decimal128":
        return pa.decimal128(int(obj["precision"]), int(obj["scale"]))
    if name == "time32":
        return pa.time32(obj["unit"])
    if name == "time64":
        return pa.time64(obj["unit"])
    if name == "duration":
        return pa.duration(obj["unit"])
    raise ValueError(f"unsupported bounds type {name!r}")


def bounds_to_json(bounds: pa.Array) -> dict:
    """A JSON-ready dict ``{"type": ..., "values": [...]}`` for an Array of bounds.

    Values: bool, int (ints; date32 in days, date64 in ms; timestamps, times and
    durations in their unit), string of the unscaled integer (decimal128), float or "NaN"/"Infinity"/
    "-Infinity" (floats; -0.0 written as 0.0), str (string), base64 str (binary)."""
    if isinstance(bounds, pa.ChunkedArray):
        bounds = bounds.combine_chunks()
    t = bounds.type
    if pa.types.is_floating(t):
        values = [_float_to_json(v) for v in bounds.to_pylist()]
    elif (pa.types.is_date32(t) or pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_time32(t) or pa.types.is_time64(t)
          or pa.types.is_duration(t)):
        storage = pa.int32() if pa.types.is_time32(t) or pa.types.is_date32(t) else pa.int64()
        values = bounds.view(storage).to_pylist()
    elif pa.types.is_decimal(t):
        raw = np.frombuffer(bounds.buffers()[1], np.uint8)[16 * bounds.offset : 16 * (bounds.offset + len(bounds))]
        values = [str(int.from_bytes(raw[16 * i : 16 * i + 16].tobytes(), "little", signed=True))
                  for i in range(len(bounds))]
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
        values = [base64.b64encode(v).decode("ascii") for v in bounds.to_pylist()]
    else:
        values = bounds.to_pylist()
    return {"type": _type_to_json(t), "values": values}


def bounds_from_json(obj) -> pa.Array:
    """Inverse of :func:`bounds_to_json` (ValueError on malformed input)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("values"), list):
        raise ValueError(f"malformed bounds {obj!r}")
    t = _type_from_json(obj.get("type"))
    values = obj["values"]
    if pa.types.is_floating(t):
        return pa.array([_float_from_json(v) for v in values], type=t)
    if (pa.types.is_date32(t) or pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_time32(t) or pa.types.is_time64(t)
            or pa.types.is_duration(t)):
        storage = pa.int32() if pa.types.is_time32(t) or pa.types.is_date32(t) else pa.int64()
        return pa.array(values, type=storage).view(t)
    if pa.types.is_decimal(t):
        if not all(isinstance(v, str) for v in values):
            raise ValueError("decimal bounds must be strings of unscaled integers")
        data = b"".join(int(v).to_bytes(16, "little", signed=True) for v in values)
        return pa.Array.from_buffers(t, len(values), [None, pa.py_buffer(data)])
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.array([base64.b64decode(v) for v in values], type=t)
    return pa.array(values, type=t)
