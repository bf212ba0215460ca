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
    assert got.equals(rcfmt.read_table(clean).slice(0, 500))


def test_without_checksums_damage_is_still_an_error_or_a_value(clean, tmp_path):
    """With verification off, a damaged page of the filter column (x, rows 0..499) may
    decode to garbage: then the scan keeps exactly the rows whose decoded x passes the
    filter, in order, with their other columns intact, and every row of the undamaged
    pages exactly as written."""
    path = _damaged(clean, tmp_path, "x", block=0, page=0)
    with rcfmt.open(path, verify_checksums=False) as f:
        try:
            got = f.scan(filter=col("x") >= 0, use_threads=False).read()
        except CorruptFileError:
            return
    want = rcfmt.read_table(clean)
    rows = np.rint(got["f"].to_numpy() * 3).astype(np.int64)  # the row each result row is (f = row / 3)
    assert np.all(np.diff(rows) > 0) and got["f"].equals(want["f"].take(rows)) and got["d"].equals(want["d"].take(rows))
    x = got["x"].to_numpy()
    assert np.all(x >= 0)  # the filter holds for the values decoded
    undamaged = rows >= 500
    assert rows[undamaged].tolist() == list(range(500, N)) and np.array_equal(x[undamaged], rows[undamaged])


@pytest.mark.parametrize("delta", [-1, -9, 1, 7])
def test_page_index_length_that_disagrees_with_the_page_is_refused(clean, tmp_path, delta):
    """A filtered scan reads only the byte ranges the page index gives (nearby pages into
    one buffer, the gaps never read), so a page whose header and stored body do not fill
    its entry's length exactly -- it would reach into bytes that were not read -- is a
    located CorruptFileError, not garbage decoded from the unread gap."""
    from data import make_bad

    parts = make_bad.split_file(clean.read_bytes())

    def edit(entries):
        entries[1]["length"] = int(entries[1]["length"]) + delta

    make_bad.patch_page_index(parts, "f", 1, edit)
    path = tmp_path / "forged.rcfmt"
    path.write_bytes(make_bad.build_file(parts))
    # block 1: two rows selected, on pages 1 and 2 of "f", read as one range (fewer rows
    # than the chunk has pages: read through the page index; the filter column "x" and
    # more rows are read as whole chunks, natively, without the entries' lengths)
    two_pages = (col("x") >= 2999) & (col("x") < 3001)
    with rcfmt.open(path) as f:
        with pytest.raises(CorruptFileError, match="page index says") as info:
            f.scan(filter=two_pages, use_threads=False).read()
    assert info.value.column == "f" and info.value.block == 1
    with rcfmt.open(path) as f:  # pages the forged entry does not describe still read
        assert f.scan(filter=col("x") < 500, use_threads=False).read().equals(rcfmt.read_table(clean).slice(0, 500))


def test_pages_far_apart_are_read_apart_into_one_run(tmp_path):
    """Selected pages farther apart than the coalescing gap are fetched by separate reads
    (fewer bytes than the span between them) and decoded as one run, in row order."""
    n = 200_000
    t = pa.table({"k": np.arange(n, dtype=np.int64), "v": np.random.default_rng(1).random(n)})
    path = tmp_path / "far.rcfmt"
    rcfmt.write_table(t, path, block_rows=n, page_rows=1000, compression="none", bloom_filter_columns=None)
    expr = ((col("k") >= 10) & (col("k") < 20)) | ((col("k") >= 190_000) & (col("k") < 190_010))
    with rcfmt.open(path) as f:
        scan = f.scan(filter=expr, use_threads=False)
        got = scan.read()
        span = f.size // 2
    assert got["k"].to_pylist() == [*range(10, 20), *range(190_000, 190_010)]
    assert got["v"].to_pylist() == t["v"].to_pylist()[10:20] + t["v"].to_pylist()[190_000:190_010]
    assert scan.stats.pages_read == 4 and scan.stats.bytes_read < span
