"""Write the golden file of the split encodings (FORMAT.md §7.7 BYTE_SPLIT, §7.8
ALP_SPLIT) and of a dictionary page compressed apart from its raw data pages (§4.2)
once: ``golden_split.rcfmt`` and its expected content ``golden_split.arrow`` (Arrow IPC).
Never regenerate them: tests/format/test_golden_split.py proves that files written with these
layouts keep reading back exactly.

    python tests/data/make_golden_split.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

import rcfmt

HERE = Path(__file__).resolve().parent


def table() -> pa.Table:
    n = 3000
    i = np.arange(n)
    rng = np.random.default_rng(26)
    minute = (i * 7) % 1440
    hhmm = (minute // 60) * 100 + minute % 60
    delay = np.where(i % 50 == 7, np.nan, np.where(i % 97 == 3, -0.0, (i * 13) % 400 - 20.0))
    return pa.table({
        "hhmm": pa.array(hhmm.astype(np.int16), mask=i % 17 == 4),
        "wide": pa.array((i * 1_000_003 - (1 << 40)).astype(np.int64)),
        "u64": pa.array((np.uint64(1) << np.uint64(63)) + (i % 300).astype(np.uint64)),
        "day": pa.array((19000 + i // 40).astype(np.int32), pa.date32()),
        "ts": pa.array(1_700_000_000_000_000 + (i % 500) * 60_000_000, pa.timestamp("us", "UTC")),
        "f32": pa.array(rng.normal(size=n).astype(np.float32)),
        "delay": pa.array(delay),
        "delay32": pa.array(((i % 90) / 4).astype(np.float32), mask=i % 23 == 0),
        "tail": pa.array([None if k % 19 == 0 else f"aircraft registration N{c:04d}XY"
                          for k, c in zip(i, rng.integers(0, 60, n))]),
    })


def main() -> None:
    t = table()
    encoding = {"hhmm": "byte_split", "wide": "byte_split", "u64": "byte_split", "day": "byte_split",
                "ts": "byte_split", "f32": "byte_split", "delay": "alp_split", "delay32": "alp_split"}
    rcfmt.write_table(t, HERE / "golden_split.rcfmt", block_rows=1024, page_rows=300, encoding=encoding)
    with ipc.new_file(HERE / "golden_split.arrow", t.schema) as w:
        w.write_table(t)


if __name__ == "__main__":
    main()
