"""Write the nested-fields golden file (FORMAT.md §3a) once: ``golden_nested.rcfmt`` and
its expected content ``golden_nested.arrow`` (Arrow IPC). Never regenerate them: the
test (tests/format/test_golden_nested.py) proves that files written with this layout keep
reading back exactly.

    python tests/data/make_golden_nested.py
"""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

import rcfmt

HERE = Path(__file__).resolve().parent


def table() -> pa.Table:
    n = 40
    user = pa.StructArray.from_arrays(
        [pa.array([i if i % 7 else None for i in range(n)], pa.int64()),
         pa.array([f"user{i % 5}" for i in range(n)])],
        fields=[pa.field("id", pa.int64()), pa.field("name", pa.string(), nullable=False)],
        mask=pa.array([i % 11 == 3 for i in range(n)]))
    payload = pa.StructArray.from_arrays(
        [user, pa.array([Decimal(i) / 4 for i in range(n)], pa.decimal128(9, 2))], names=["user", "amount"],
        mask=pa.array([i % 13 == 5 for i in range(n)]))
    return pa.table({
        "id": pa.array(range(n), pa.int32()),
        "payload": payload,
        "tags": pa.array([None if i % 9 == 0 else [f"t{j}" if j % 3 else None for j in range(i % 4)]
                          for i in range(n)]),
        "big": pa.array([[i * 1.5] * (i % 3) for i in range(n)], pa.large_list(pa.float64())),
        "pair": pa.array([None if i % 6 == 1 else [i, -i] for i in range(n)], pa.list_(pa.int16(), 2)),
        "attrs": pa.array([[(f"k{j}", None if j == 1 else i * j) for j in range(i % 3)] for i in range(n)],
                          pa.map_(pa.string(), pa.int64())),
        "deep": pa.array([[[{"a": [i, None]}], None] if i % 4 else [] for i in range(n)]),
    })


def main() -> None:
    t = table()
    rcfmt.write_table(t, HERE / "golden_nested.rcfmt", block_rows=16, page_rows=6, compression="zstd")
    with ipc.new_file(HERE / "golden_nested.arrow", t.schema) as w:
        w.write_table(t)


if __name__ == "__main__":
    main()
