"""One row per extreme of every column type a filter takes (a NULL last): the table the
expression tests of the engine (tests/predicate/test_expr.py) and of the independent oracle
(tests/predicate/test_oracle_filter.py) both check their hand-written truths on."""
from decimal import Decimal

import pyarrow as pa

NAN = float("nan")

EVERY_TYPE = pa.table({
    "bool": pa.array([True, False, None]),
    "i8": pa.array([-128, 127, None], pa.int8()),
    "u64": pa.array([2**64 - 1, 0, None], pa.uint64()),
    "i64": pa.array([-(2**63), 2**63 - 1, None], pa.int64()),
    "f32": pa.array([-0.0, NAN, None], pa.float32()),
    "date": pa.array([0, 18262, None], pa.int32()).view(pa.date32()),
    "ts_s": pa.array([0, 1, None], pa.int64()).view(pa.timestamp("s")),
    "ts_ns_tz": pa.array([0, 1, None], pa.int64()).view(pa.timestamp("ns", tz="Asia/Tokyo")),
    "dec": pa.array([Decimal("1.5"), Decimal("-99999999999999999999999999.9999999999"), None], pa.decimal128(36, 10)),
    "str": pa.array(["é", "", None]),
    "lstr": pa.array(["ab", "b", None], pa.large_string()),
    "lbin": pa.array([b"\x00", b"\xff", None], pa.large_binary()),
    "dict": pa.array(["b", "a", None]).dictionary_encode(),
    "dict_f": pa.array([NAN, 1.0, None]).dictionary_encode(),
})
