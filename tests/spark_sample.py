"""The sample table of the Spark tests (every Spark-writable type, with NULLs, NaN, +-0.0,
+-inf, shared string prefixes), importable without pyspark."""
from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa

N = 600


def sample_table() -> pa.Table:
    """Every Spark-writable type, with NULLs, NaN, +-0.0, +-inf, shared string prefixes."""
    i = np.arange(N)
    floats = (i % 11 - 5) / 2.0
    floats = np.where(i % 17 == 0, np.nan, floats)
    floats = np.where(i % 23 == 0, -0.0, floats)
    floats = np.where(i % 97 == 0, np.inf, floats)

    def nulls(every, values, t):
        return pa.array([None if k % every == 3 else v for k, v in enumerate(values)], t)

    base_ts = 1_700_000_000_000_000
    return pa.table({
        "id": pa.array(i, pa.int64()),
        "b": nulls(7, [bool(k % 2) for k in i], pa.bool_()),
        "i8": nulls(9, [int(k % 200 - 100) for k in i], pa.int8()),
        "i16": nulls(10, [int(k * 37 % 3000 - 1500) for k in i], pa.int16()),
        "i32": nulls(5, [int(k % 50) for k in i], pa.int32()),
        "f": nulls(13, list(floats), pa.float64()),
        "r": nulls(8, [float(np.float32((k % 9) / 4)) for k in i], pa.float32()),
        "dec": nulls(6, [decimal.Decimal(int(k) * 7 % 1000 - 500) / 100 for k in i], pa.decimal128(10, 2)),
        "big": nulls(11, [decimal.Decimal(int(k)) ** 9 for k in i], pa.decimal128(38, 0)),
        "d": nulls(12, [dt.date(2024, 1, 1) + dt.timedelta(days=int(k % 40)) for k in i], pa.date32()),
        "ts": nulls(14, [base_ts + int(k) * 3_600_000_000 for k in i], pa.timestamp("us", tz="UTC")),
        "ntz": nulls(15, [base_ts + int(k) * 60_000_000 for k in i], pa.timestamp("us")),
        "s": nulls(4, [f"{['ab', 'abc', 'b', 'zz', ''][k % 5]}{k % 13}" for k in i], pa.string()),
        "bin": nulls(16, [bytes([k % 256, 0, 255]) for k in i], pa.binary()),
        "p": pa.array([int(k % 3) for k in i], pa.int32()),
    })


def stats_records(directory, kind: str) -> list[dict]:
    """The JSON records the Spark source wrote under its ``statsDir`` option: ``kind``
    "schema", "plan" (one per planned read) or "task" (one per task)."""
    import glob
    import json
    import os

    out = []
    for path in sorted(glob.glob(os.path.join(directory, f"{kind}-*.json"))):
        with open(path) as fh:
            out.append(json.load(fh))
    return out
