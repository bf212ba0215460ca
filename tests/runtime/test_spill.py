"""SpillList: entries past the memory budget go to a temporary file and come back whole;
a Writer that spills its bloom filters and bitmap indexes writes the same bytes."""
from __future__ import annotations

import os
import tempfile
from concurrent.futures import Future

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import rcfmt
from rcfmt.runtime import spill
from rcfmt.runtime.spill import SpillList


def _done(value) -> Future:
    f = Future()
    f.set_result(value)
    return f


def test_entries_past_the_budget_are_spilled_and_read_back():
    entries = [bytes([i % 251]) * (i * 37 % 1000) if i % 5 else None for i in range(200)]
    lst = SpillList(budget=4096)
    lst.extend(entries)
    assert len(lst) == len(entries)
    assert lst.spilled_bytes > 0
    assert lst.spilled_bytes == sum(len(e) for e in entries if e is not None) - sum(
        len(e) for e in lst._items if isinstance(e, bytes))
    assert [lst[k] for k in range(len(entries))] == entries
    assert list(lst) == entries
    assert lst[3::7] == entries[3::7]
    assert lst.present() == [k for k, e in enumerate(entries) if e is not None]
    lst.close()
    assert len(lst) == 0 and lst.spilled_bytes > 0


def test_futures_are_held_once_settled():
    lst = SpillList(budget=10)
    pending = Future()
    lst.append(_done(b"a" * 8))
    lst.append(pending)
    lst.append(b"bb")
    lst.append(_done(None))
    lst.settle(keep=3)  # the first future only
    assert lst.spilled_bytes == 0
    pending.set_result(b"c" * 20)
    assert lst[1] == b"c" * 20  # (read before it is settled: the future's value)
    lst.settle()
    assert lst.spilled_bytes == 20  # (8 + 2 held; 20 more would pass the budget of 10)
    assert list(lst) == [b"a" * 8, b"c" * 20, b"bb", None]
    assert lst.present() == [0, 1, 2]


def test_the_spill_file_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    lst = SpillList(budget=0)
    lst.extend([b"x" * 100, b"y" * 50])
    assert lst[1] == b"y" * 50
    assert os.listdir(tmp_path) == []  # (an unlinked file from the start)
    lst.close()
    lst.close()


def _table(n=200_000):
    rng = np.random.default_rng(7)
    return pa.table({
        "k": np.arange(n, dtype=np.int64),
        "s": pa.array([f"v{i % 5000:05d}" for i in range(n)]),
        "g": rng.integers(0, 7, n),
        "x": rng.random(n),
    })


@pytest.mark.parametrize("threads", [True, False])
def test_a_writer_that_spills_writes_the_same_file(tmp_path, monkeypatch, threads):
    table = _table()
    options = dict(block_rows=8192, bloom_filter_columns=["k", "s"], bitmap_indexes={"g": "equality", "x": "range"},
                   use_threads=threads)
    rcfmt.write_table(table, tmp_path / "held.rcfmt", **options)
    made = []
    real = tempfile.TemporaryFile

    def counted(*a, **k):
        made.append(1)
        return real(*a, **k)

    monkeypatch.setattr(spill, "SPILL_BUDGET", 1 << 14)
    monkeypatch.setattr(spill.tempfile, "TemporaryFile", counted)
    rcfmt.write_table(table, tmp_path / "spilled.rcfmt", **options)
    assert len(made) == 2  # the blooms and the bitmap indexes both spilled
    assert (tmp_path / "held.rcfmt").read_bytes() == (tmp_path / "spilled.rcfmt").read_bytes()
    cases = [(rcfmt.col("k") == 123_456, pc.equal(table["k"], 123_456)),
             (rcfmt.col("s") == "v04321", pc.equal(table["s"], "v04321")),
             (rcfmt.col("g") == 3, pc.equal(table["g"], 3)),
             (rcfmt.col("x") < 0.01, pc.less(table["x"], 0.01))]
    for flt, mask in cases:
        got = rcfmt.read_table(tmp_path / "spilled.rcfmt", filter=flt)
        assert got.num_rows > 0
        assert got.sort_by("k").equals(table.filter(mask).sort_by("k"))


def test_an_aborted_writer_closes_its_spill_file(tmp_path, monkeypatch):
    monkeypatch.setattr(spill, "SPILL_BUDGET", 0)
    files = []
    real = tempfile.TemporaryFile

    def kept(*a, **k):
        f = real(*a, **k)
        files.append(f)
        return f

    monkeypatch.setattr(spill.tempfile, "TemporaryFile", kept)
    table = _table(50_000)
    w = rcfmt.Writer(tmp_path / "a.rcfmt", table.schema, block_rows=8192, bloom_filter_columns=["k"])
    w.write(table)
    w.flush_block()
    assert files and not files[0].closed
    w.abort()
    assert all(f.closed for f in files)
    assert not (tmp_path / "a.rcfmt").exists()


def test_a_full_temporary_directory_is_a_storage_error_naming_it(monkeypatch):
    """A spill the file system refuses (disk full) is an rcfmt StorageError that says
    where the spill went and what to set (before: a bare OSError naming no file)."""
    def full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(spill.os, "pwrite", full)
    lst = SpillList(budget=0)
    with pytest.raises(rcfmt.StorageError, match="TMPDIR") as info:
        lst.append(b"x" * 100)
    assert info.value.errno == 28 and tempfile.gettempdir() in str(info.value)


def test_a_local_write_the_file_system_refuses_is_a_storage_error(tmp_path):
    """A file-size limit (or a full disk) refuses a local write: a StorageError naming the
    target, nothing left under it or its temporary name (fresh interpreter: the limit is
    the process's)."""
    import subprocess
    import sys
    import textwrap

    target = tmp_path / "big.rcfmt"
    code = textwrap.dedent(f"""
        import resource, numpy as np, pyarrow as pa, rcfmt
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 10, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        t = pa.table({{"x": np.random.default_rng(0).random(1 << 20)}})
        try:
            rcfmt.write_table(t, {str(target)!r}, compression="none")
        except rcfmt.StorageError as exc:
            print("StorageError", exc.errno, {str(target)!r} in str(exc))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["StorageError", "27", "True"], out.stderr[-2000:]
    assert os.listdir(tmp_path) == []
