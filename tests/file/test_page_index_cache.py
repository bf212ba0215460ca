"""What the opens of a dataset's data files share: their footers (cached on local disk
too, with what scans work out from them alone) and the page indexes their scans read and
check; single files opened by path share nothing; the shared page indexes stay within
their byte bound."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
from rcfmt import col
from rcfmt.file import page_index_cache, reader
from rcfmt.file.footer_cache import FOOTERS
from rcfmt.file.page_index_cache import PageIndexCache, SharedPageIndexes
from rcfmt.format import footer as footer_mod
from rcfmt.scan import query as query_mod


def _table(n: int = 6000) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({"k": pa.array(np.arange(n, dtype=np.int64)),
                     "s": pa.array([f"v{i % 97}" for i in range(n)]),
                     "x": pa.array(rng.normal(size=n))})


@pytest.fixture
def counted(monkeypatch):
    """Counts of page-index records read and footers parsed, from a clean cache."""
    FOOTERS.clear()
    page_index_cache.SHARED.clear()
    counts = {"page_indexes": 0, "footers": 0, "projections": 0}
    real_read, real_parse = reader.RcfmtFile.page_index, footer_mod.parse_footer
    real_projection = query_mod.ScanQuery._output_schema

    def projection(self, *a, **k):
        counts["projections"] += 1
        return real_projection(self, *a, **k)

    monkeypatch.setattr(query_mod.ScanQuery, "_output_schema", projection)

    def read(self, block, column, raw=None, base=0):
        counts["page_indexes"] += 1
        return real_read(self, block, column, raw, base)

    def parse(*a, **k):
        counts["footers"] += 1
        return real_parse(*a, **k)

    monkeypatch.setattr(reader.RcfmtFile, "page_index", read)
    monkeypatch.setattr(reader, "parse_footer", parse)
    yield counts
    FOOTERS.clear()
    page_index_cache.SHARED.clear()


def test_opens_of_a_datasets_files_share_footers_and_page_indexes(tmp_path, counted):
    table = _table()
    root = str(tmp_path / "ds")
    for i in range(3):  # (three files)
        rcfmt.write_dataset(table.slice(2000 * i, 2000), root, mode="append" if i else "overwrite", block_rows=500)
    ds = rcfmt.dataset(root)
    positions = [3, 1999, 2000, 4500, 5999]
    want = table.take(positions)
    assert ds.take(positions).equals(want)
    first = dict(counted)
    assert first["page_indexes"] > 0
    for _ in range(3):  # (every file opened anew: nothing read or parsed again)
        assert ds.take(positions).equals(want)
    assert counted == first
    assert ds.read(filter=col("k") == 4321).equals(table.slice(4321, 1))
    seen = dict(counted)
    assert rcfmt.dataset(root).take(positions, use_threads=False).equals(want)
    assert counted["page_indexes"] == seen["page_indexes"]

    # a single file opened by path shares nothing: it may be replaced in place
    path = str(tmp_path / "one.rcfmt")
    rcfmt.write_table(table, path, block_rows=500)
    read = []
    for _ in range(2):
        before = dict(counted)
        with rcfmt.open(path) as f:
            assert f.take(positions).equals(want)
        assert counted["footers"] == before["footers"] + 1
        read.append(counted["page_indexes"] - before["page_indexes"])
    assert read[0] == read[1] == 5 * 3  # (the 5 blocks holding a row, 3 columns each: every open again)


def test_opens_not_verifying_checksums_keep_their_own_page_indexes(tmp_path, counted):
    root = str(tmp_path / "ds")
    rcfmt.write_dataset(_table(), root, block_rows=500)
    path = rcfmt.dataset(root).get_fragments()[0].path
    shared = reader.RcfmtFile(path, immutable=True, shared_page_indexes=True)
    unverified = reader.RcfmtFile(path, immutable=True, shared_page_indexes=True, verify_checksums=False)
    again = reader.RcfmtFile(path, immutable=True, shared_page_indexes=True)
    try:
        assert shared.page_index_cache is again.page_index_cache
        assert unverified.page_index_cache is not shared.page_index_cache
        shared.take([10, 4000])
        assert again.page_index_cache and not unverified.page_index_cache
    finally:
        for f in (shared, unverified, again):
            f.close()


class _Index:
    def __init__(self, nbytes: int):
        self.entries = np.zeros(nbytes, np.uint8)


def test_shared_page_indexes_stay_within_their_bytes_least_recent_file_dropped_first():
    shared = SharedPageIndexes(max_bytes=1000)
    a, b = shared.get("a"), shared.get("b")
    a.keep(0, 0, _Index(400))
    b.keep(0, 0, _Index(400))
    assert shared.get("a") is a  # (a used last: b is the least recent)
    c = shared.get("c")
    c.keep(0, 0, _Index(400))
    assert len(shared) == 2 and shared.get("b") is not b and shared.get("a") is a
    b.keep(0, 1, _Index(100))  # (dropped: its growth no longer counted, and it still answers)
    assert (0, 1) in b.entries
    assert shared._bytes <= shared.max_bytes

    own = PageIndexCache()
    index = _Index(page_index_cache.PAGE_INDEX_CACHE_BYTES)
    assert own.keep(0, 0, index) is index and own.entries
    assert own.keep(0, 1, _Index(1)) is not None and (0, 1) not in own.entries  # (full: kept no more)
    assert own.keep(0, 0, _Index(5)) is not own.entries[(0, 0)]  # (held already: the first one stays)


@pytest.mark.parametrize("how", ["plain directory", "file as a dataset", "adopted file, dataset re-created"])
def test_a_file_replaced_by_one_of_its_size_is_not_read_from_the_caches(tmp_path, how):
    """A data file whose name is the user's (a plain directory's, one opened as a
    dataset, one a dataset adopted) replaced at its path by a file of the same size:
    filters read its own statistics, not the cached footer's (0 rows of 1,000 before:
    the caches were keyed by path and size)."""
    import os
    import shutil

    options = dict(compression="none", bloom_filter_columns=None, bitmap_indexes=None)
    root = tmp_path / "d"

    def make(first: int):
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir()
        rcfmt.write_table(pa.table({"x": pa.array(range(first, first + 1000), pa.int64())}), root / "a.rcfmt",
                          **options)
        if how.startswith("adopted"):
            rcfmt.write_dataset(pa.table({"x": pa.array([-1], pa.int64())}), str(root), mode="append")

    def rows(first: int) -> int:
        where = root / "a.rcfmt" if how == "file as a dataset" else root
        return rcfmt.dataset(str(where)).to_table(filter=col("x") >= first).num_rows

    make(0)
    size = os.path.getsize(root / "a.rcfmt")
    assert rows(0) == 1000
    if how.startswith("adopted"):
        make(5000)
    else:  # replaced in place (os.replace of a new file: another inode)
        rcfmt.write_table(pa.table({"x": pa.array(range(5000, 6000), pa.int64())}), tmp_path / "b.rcfmt", **options)
        os.replace(tmp_path / "b.rcfmt", root / "a.rcfmt")
    assert os.path.getsize(root / "a.rcfmt") == size
    assert rows(5000) == 1000
