"""Streams (``iter_batches``, the Arrow C stream) decode blocks on the pool with
``use_threads``: the same batches in the same order as one thread, at most a bounded
window of blocks decoded ahead of the consumer, and a consumer that stops early leaves
the remaining blocks undecoded."""
import os
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import rcfmt
from rcfmt import col
from rcfmt.scan import scanner


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("stream") / "t.rcfmt"
    n = 64 * 1_000
    rcfmt.write_table(pa.table({"a": np.arange(n), "s": [f"v{i % 97}" for i in range(n)]}), p, block_rows=1_000)
    return p


@pytest.mark.parametrize("filter", [None, (col("a") >= 5_500) & (col("s") != "v3")])
def test_threaded_stream_is_the_single_threaded_one(path, filter):
    with rcfmt.open(path) as f:
        one = list(f.scan(filter=filter, use_threads=False).iter_batches(700))
        many = f.scan(filter=filter, use_threads=True)
        got = list(many.iter_batches(700))
    assert [b.num_rows for b in got] == [b.num_rows for b in one]
    assert pa.Table.from_batches(got).equals(pa.Table.from_batches(one))
    assert many.stats.rows_selected == sum(b.num_rows for b in one)


def test_stream_decodes_a_bounded_window_ahead_and_stops_early(path, monkeypatch):
    started = []
    lock = threading.Lock()
    original = scanner.FileScan.scan_block

    def counting(self, block):
        with lock:
            started.append(block)
        return original(self, block)

    monkeypatch.setattr(scanner.FileScan, "scan_block", counting)
    window = scanner.STREAM_WINDOW * min(os.cpu_count() or 1, 8)
    with rcfmt.open(path) as f:
        stream = f.scan(use_threads=True).iter_batches(1_000)
        first = next(stream)
        assert first["a"].to_pylist()[:3] == [0, 1, 2]
        assert len(started) <= window + 1 < f.num_blocks
        stream.close()  # the consumer stops: blocks not started are cancelled
    assert len(started) <= window + 2
    assert sorted(started) == list(range(len(started)))


def test_dataset_stream_uses_threads_and_keeps_order(tmp_path):
    root = tmp_path / "ds"
    for i in range(3):
        rcfmt.write_dataset(pa.table({"a": np.arange(i * 5_000, (i + 1) * 5_000)}), root, block_rows=500)
    ds = rcfmt.dataset(root)
    got = pa.Table.from_batches(list(ds.scan(filter=col("a") >= 100).iter_batches(300)))
    assert sorted(got["a"].to_pylist()) == list(range(100, 15_000))


def test_scans_share_one_pool_and_a_forked_child_gets_its_own(path):
    """Threaded scans reuse the process's scan pool (no threads started per scan); a
    child forked after a threaded scan scans with threads too (a pool's threads do not
    survive a fork: the child must not wait on them)."""
    import multiprocessing

    from rcfmt.runtime.threads import shared_pool

    with rcfmt.open(path) as f:
        f.scan(use_threads=True).read()
    pool = shared_pool("scan")
    with rcfmt.open(path) as f:
        got = f.scan(filter=col("a") < 3_000, use_threads=True).read()
    assert shared_pool("scan") is pool and got.num_rows == 3_000
    before = {t.name for t in threading.enumerate()}
    with rcfmt.open(path) as f:
        f.scan(use_threads=True).read()
    assert {t.name for t in threading.enumerate()} - before == set()  # no thread started for the scan

    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as children:
        rows = children.apply_async(_threaded_rows, (str(path),)).get(timeout=60)
    assert rows == 64 * 1_000


def _threaded_rows(path: str) -> int:
    return rcfmt.read_table(path, use_threads=True).num_rows


def test_small_blocks_are_decoded_on_the_calling_thread_large_ones_on_the_pool(tmp_path, monkeypatch):
    """With the default threshold (the suites run with 0: every scan on the pool), a
    local scan's blocks go to the pool only when the columns it decodes hold
    PARALLEL_BLOCK_BYTES per block on average: 4,096-row blocks of five columns stay on
    the calling thread (reads, counts and streams), 131,072-row blocks of the same
    columns go to the pool, and a projection of one small column of them stays. The rows
    are the same either way."""
    from rcfmt.scan import scheduling

    monkeypatch.setattr(scheduling, "PARALLEL_BLOCK_BYTES", 384 << 10)
    n = 1 << 18
    rng = np.random.default_rng(5)
    table = pa.table({"a": np.arange(n), "f": rng.standard_normal(n), "i": rng.integers(0, 1 << 30, n).astype(np.int32),
                      "s": pa.array(rng.choice(["alpha", "beta", "gamma"], n)), "b": rng.integers(0, 100, n).astype(np.int8)})
    small, large = tmp_path / "small.rcfmt", tmp_path / "large.rcfmt"
    rcfmt.write_table(table, small, block_rows=4096)
    rcfmt.write_table(table, large, block_rows=131_072)
    seen = []
    original = scanner.FileScan._block

    def block(self, b, count_only):
        seen.append(threading.current_thread().name)
        return original(self, b, count_only)

    monkeypatch.setattr(scanner.FileScan, "_block", block)

    def threads_used(run) -> set:
        seen.clear()
        run()
        return {name.startswith("rcfmt-scan") for name in seen}

    expr = col("b") < 50
    with rcfmt.open(small) as f:
        assert threads_used(lambda: f.scan(use_threads=True).read()) == {False}
        assert threads_used(lambda: f.scan(filter=expr, use_threads=True).count()) == {False}
        assert threads_used(lambda: list(f.scan(use_threads=True).iter_batches())) == {False}
        assert f.scan(filter=expr, use_threads=True).read().equals(f.scan(filter=expr, use_threads=False).read())
    with rcfmt.open(large) as f:
        assert threads_used(lambda: f.scan(use_threads=True).read()) == {True}
        assert threads_used(lambda: f.scan(use_threads=False).read()) == {False}
        assert threads_used(lambda: f.scan(["b"], use_threads=True).read()) == {False}  # 131 KB of int8 per block
        # a count decodes the filter's columns alone: "b" here, however wide the projection
        assert threads_used(lambda: f.scan(filter=expr, use_threads=True).count()) == {False}
        assert threads_used(lambda: f.scan(filter=col("f") > 0, use_threads=True).count()) == {True}
        assert f.scan(filter=expr, use_threads=True).read().equals(table.filter(pc.less(table["b"], 50)))


def test_a_datasets_small_block_files_are_scanned_one_after_another(tmp_path, monkeypatch):
    """With the default threshold, a local dataset's files go to threads of their own only
    when their blocks are large (half of PARALLEL_BLOCK_BYTES of stored bytes per block):
    files of 4,096-row blocks are read one after another on the calling thread, files
    of 131,072-row blocks in parallel; the rows are the same."""
    from rcfmt.dataset import scanning
    from rcfmt.scan import scheduling

    monkeypatch.setattr(scheduling, "PARALLEL_BLOCK_BYTES", 384 << 10)
    n = 1 << 19
    rng = np.random.default_rng(9)
    table = pa.table({"a": np.arange(n), "f": rng.standard_normal(n), "i": rng.integers(0, 1 << 30, n).astype(np.int32)})
    seen = []
    original = scanning.DatasetScan._read_fragment

    def read_fragment(self, frag, use_threads):
        seen.append(threading.current_thread() is threading.main_thread())
        return original(self, frag, use_threads)

    monkeypatch.setattr(scanning.DatasetScan, "_read_fragment", read_fragment)
    for block_rows, on_main in ((4096, {True}), (131_072, {False})):
        root = tmp_path / f"ds{block_rows}"
        rcfmt.write_dataset(table, root, block_rows=block_rows, target_file_rows=131_072)
        seen.clear()
        got = rcfmt.dataset(root).scan(use_threads=True).read()
        assert len(seen) == 4 and set(seen) == on_main, block_rows
        assert got.sort_by("a").equals(table)
