"""Streams (``iter_batches``, the Arrow C stream) decode blocks on the pool with
``use_threads``: the same batches in the same order as one thread, at most a bounded
window of blocks decoded ahead of the consumer, and a consumer that stops early leaves
the remaining blocks undecoded."""
import os
import threading

import numpy as np
import pyarrow as pa
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
