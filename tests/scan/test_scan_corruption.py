"""Damaged pages reached through a filtered scan raise located errors on every decode
path of the scanner: whole chunks (every row a candidate), single pages (page index
pruning), and dictionary chunks."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
from rcfmt import ChecksumError, CorruptFileError, col

N = 4000


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    path = tmp_path_factory.mktemp("scan_corruption") / "t.rcfmt"
    t = pa.table({"x": np.arange(N, dtype=np.int64), "f": np.arange(N) / 3.0,
                  "d": pa.array([f"v{i % 5}" for i in range(N)])})
    rcfmt.write_table(t, path, block_rows=2000, page_rows=500, compression="none", bloom_filter_columns=None)
    return path


def _damaged(clean, tmp_path, column: str, block: int, page: int):
    """A copy of ``clean`` with one byte flipped in the body of a data page."""
    with rcfmt.open(clean) as f:
        c = f.column_index(column)
        entries = f.page_index(block, c)
        pos = int(entries["offset"][page]) + int(entries["length"][page]) - 1
    data = bytearray(clean.read_bytes())
    data[pos] ^= 0x40
    out = tmp_path / "damaged.rcfmt"
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize("column", ["x", "f", "d"])
@pytest.mark.parametrize("query", ["all candidates", "one page"])
def test_damage_is_located(clean, tmp_path, column, query):
    path = _damaged(clean, tmp_path, column, block=1, page=2)  # rows 3000..3499
    expr = col("x") >= 0 if query == "all candidates" else (col("x") >= 3100) & (col("x") < 3200)
    with rcfmt.open(path) as f:
        with pytest.raises(ChecksumError) as info:
            f.scan(filter=expr, use_threads=False).read()
    assert info.value.column == column and info.value.block == 1
    # pages the scan does not need are never read: a query elsewhere is unaffected
    with rcfmt.open(path) as f:
        got = f.scan(filter=col("x") < 500, use_threads=False).read()
    assert got["x"].to_pylist() == list(range(500))


def test_without_checksums_damage_is_still_an_error_or_a_value(clean, tmp_path):
    path = _damaged(clean, tmp_path, "x", block=0, page=0)
    with rcfmt.open(path, verify_checksums=False) as f:
        try:
            t = f.scan(filter=col("x") >= 0, use_threads=False).read()
        except CorruptFileError:
            return
    assert t.num_rows <= N  # decoded garbage, but no crash and no extra rows
