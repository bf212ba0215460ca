"""Buffers of sparse reads (``memory.span_buffer``): small-page mappings reused only once
nothing refers to them, so that a table a read returned never shares bytes with a
later read's buffer."""
from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
from rcfmt.runtime import memory


@pytest.fixture
def arenas(monkeypatch):
    fresh = memory._Arenas()
    monkeypatch.setattr(memory, "_ARENAS", fresh)
    return fresh


def _mapped(buf: np.ndarray) -> bool:
    return isinstance(buf.base, memoryview) and type(buf.base.obj).__name__ == "mmap"


def test_dense_spans_come_from_the_pool_and_sparse_ones_from_mappings(arenas):
    n = memory.SPARSE_SPAN
    assert not _mapped(memory.span_buffer(n, n // 2))  # dense: the pool
    assert not _mapped(memory.span_buffer(n - 1, 10))  # small: the pool
    sparse = memory.span_buffer(n, n // memory.SPARSE_RATIO)
    assert _mapped(sparse) and len(sparse) == n and sparse.ctypes.data % 64 == 0
    assert arenas.kept() == [n]


def test_a_mapping_is_reused_only_once_nothing_refers_to_it(arenas):
    n = 3 * memory.SPARSE_SPAN
    a = memory.span_buffer(n, 1)
    a[:8] = 7
    b = memory.span_buffer(n, 1)  # a is alive: another mapping
    assert a.base.obj is not b.base.obj
    view, arrow = a[:4], pa.py_buffer(a)  # a view, and an Arrow buffer, hold a's mapping
    held = a.base.obj
    del a
    c = memory.span_buffer(n, 1)
    assert c.base.obj is not held and c.base.obj is not b.base.obj
    assert list(view) == [7] * 4
    del view, arrow, c, held
    d = memory.span_buffer(n, 1)  # a's and c's mappings are free now: one of them again
    assert len(arenas.kept()) == 3 and d.base.obj is not b.base.obj
    larger = memory.span_buffer(4 * n, 1)  # a free mapping too small is replaced
    assert len(arenas.kept()) == 3 and len(larger) == 4 * n


def test_at_most_the_kept_number_of_mappings_is_kept(arenas):
    held = [memory.span_buffer(memory.SPARSE_SPAN, 1) for _ in range(memory.ARENAS_KEPT + 3)]
    assert len(arenas.kept()) == memory.ARENAS_KEPT
    assert len({id(b.base.obj) for b in held}) == len(held)


def test_a_reclaimed_mapping_still_serves_reads(arenas):
    path_bytes = np.arange(memory.SPARSE_SPAN, dtype=np.uint8)
    for i in range(memory.ARENA_RECLAIM * 2 + 1):
        buf = memory.span_buffer(memory.SPARSE_SPAN, 1)
        buf[i * 997 % len(buf)] = path_bytes[i % 256]
        assert buf[i * 997 % len(buf)] == path_bytes[i % 256]
        del buf
    assert len(arenas.kept()) == 1


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="fork")
def test_a_forked_child_s_buffers_are_its_own(arenas):
    """Mappings are private: after a fork, the parent's next read into a reused mapping
    leaves the bytes a child holds alone (a shared mapping was overwritten under it)."""
    import os

    n = memory.SPARSE_SPAN
    held = memory.span_buffer(n, 1)
    held[:8] = 1
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: wait for the parent's write, then report what it holds
        os.close(w)
        os.read(r, 1)
        os._exit(0 if list(held[:8]) == [1] * 8 else 1)
    os.close(r)
    del held
    again = memory.span_buffer(n, 1)  # the same mapping, free in the parent
    again[:8] = 2
    os.write(w, b"x")
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_reclaimed_pages_go_back_to_the_system(arenas):
    buf = memory.span_buffer(memory.SPARSE_SPAN, 1)
    buf[:] = 7
    mapping = buf.base.obj
    del buf
    memory._reclaim(mapping)  # (private pages: freed, read back as zeros; shared ones were kept)
    assert not np.frombuffer(mapping, np.uint8).any()


@pytest.fixture(scope="module")
def wide_file(tmp_path_factory):
    """Four int64 columns of 1M rows, uncompressed and plain (pages that decode into
    views of the read buffer would show any sharing), in one block: a lookup reads a
    page of each over a span of 32 MB."""
    n = 1 << 20
    rng = np.random.default_rng(5)
    table = pa.table({"k": np.arange(n, dtype=np.int64), **{f"v{i}": rng.integers(-10**12, 10**12, n)
                                                          for i in range(3)}})
    path = tmp_path_factory.mktemp("sparse") / "wide.rcfmt"
    rcfmt.write_table(table, path, compression="none", encoding="plain", block_rows=n)
    return path, table


def test_tables_of_sparse_reads_keep_their_rows_through_later_reads(arenas, wide_file):
    path, table = wide_file
    keys = [5, 400_000, 1_000_000, 77, 777_777, 123_456] * 3
    kept = []
    with rcfmt.open(path) as f:
        for k in keys:
            kept.append((k, f.read(filter=rcfmt.col("k") == k)))
            kept.append((k, f.take([k, k + 1])))
    assert arenas.kept()  # the reads went through mappings
    for k, got in kept:
        assert got.equals(table.slice(k, got.num_rows)), k


def test_concurrent_sparse_reads_give_their_own_rows(arenas, wide_file):
    path, table = wide_file
    errors = []

    def lookups(seed):
        rng = np.random.default_rng(seed)
        try:
            with rcfmt.open(path) as f:
                for k in rng.integers(0, table.num_rows, 25):
                    got = f.read(filter=rcfmt.col("k") == int(k))
                    if not got.equals(table.slice(int(k), 1)):
                        errors.append(int(k))
        except Exception as e:  # (reported below, not lost in the thread)
            errors.append(e)

    threads = [threading.Thread(target=lookups, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
