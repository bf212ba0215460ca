"""Atomic commits: concurrent appends (threads and processes), overwrite conflicts,
failures and crashes between writing data and committing. Readers must always see one
committed version: every append's rows completely or not at all."""
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
from store_commits import run_writers_and_a_reader
from rcfmt.dataset import log
from rcfmt.dataset import commits as dataset_commit
from rcfmt.dataset import writer as dataset_writer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROWS = 10


def batch(writer_id: int, seq: int) -> pa.Table:
    tag = writer_id * 1000 + seq
    return pa.table({"tag": pa.array([tag] * ROWS, pa.int64()), "i": pa.array(range(ROWS), pa.int32())})


def _all_files(root):
    out = set()
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            out.add(os.path.relpath(os.path.join(dirpath, name), root))
    return out


def _data_files(root):
    return {f for f in _all_files(root) if not f.startswith("_rcfmt")}


def assert_consistent(ds) -> set:
    """Every tag present has all its rows; the index agrees with the files."""
    t = ds.read()
    assert t.num_rows == ds.num_rows
    tags, counts = np.unique(t["tag"].to_numpy(), return_counts=True)
    assert (counts == ROWS).all(), "a commit is visible only in part"
    return set(tags.tolist())


def _append_many(root, writer_id, n):
    for seq in range(n):
        rcfmt.write_dataset(batch(writer_id, seq), root)


# ---------------------------------------------------------------- concurrency
def test_concurrent_appends_from_threads_all_survive(tmp_path):
    root = str(tmp_path)
    rcfmt.write_dataset(batch(99, 0), root)

    def read():
        ds = rcfmt.dataset(root)
        assert_consistent(ds)
        return ds.version

    run_writers_and_a_reader(root, 4, lambda w: _append_many(root, w, 5), read)
    ds = rcfmt.dataset(root)
    assert ds.version == 21 and ds.num_files == 21
    assert log.list_versions(root) == list(range(1, 22))
    assert assert_consistent(ds) == {99000} | {w * 1000 + s for w in range(4) for s in range(5)}
    # nothing left behind: staging and tmp are empty, every data file is referenced
    assert not os.listdir(log.staging_root(root)) and not os.listdir(log.tmp_dir(root))
    assert _data_files(root) == {f.relpath for f in ds.files}


def _process_appender(root, writer_id, n):
    _append_many(root, writer_id, n)


def test_concurrent_appends_from_processes_all_survive(tmp_path):
    root = str(tmp_path)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_process_appender, args=(root, w, 4)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    ds = rcfmt.dataset(root)
    assert ds.version == 12 and ds.num_files == 12
    assert assert_consistent(ds) == {w * 1000 + s for w in range(3) for s in range(4)}
    assert _data_files(root) == {f.relpath for f in ds.files}


def _commit_meanwhile(monkeypatch, action):
    """Run ``action`` once, right after the next write finished its data files and
    before it commits: a deterministic concurrent commit."""
    original = dataset_writer.FileSetWriter.close
    done = []

    def close(self):
        files = original(self)
        if not done:
            done.append(True)
            monkeypatch.setattr(dataset_writer.FileSetWriter, "close", original)
            action()
        return files

    monkeypatch.setattr(dataset_writer.FileSetWriter, "close", close)


def test_overwrite_conflicts_with_a_concurrent_append(tmp_path, monkeypatch):
    root = str(tmp_path)
    rcfmt.write_dataset(batch(1, 0), root)
    _commit_meanwhile(monkeypatch, lambda: rcfmt.write_dataset(batch(2, 0), root))
    with pytest.raises(rcfmt.CommitConflictError, match="conflicts with version 2"):
        rcfmt.write_dataset(batch(3, 0), root, mode="overwrite")
    ds = rcfmt.dataset(root)
    assert ds.version == 2 and assert_consistent(ds) == {1000, 2000}  # the append was not lost
    assert _data_files(root) == {f.relpath for f in ds.files}  # the loser's files are gone
    assert not os.listdir(log.staging_root(root))


def test_overwrite_against_overwrite_one_loses(tmp_path, monkeypatch):
    root = str(tmp_path)
    rcfmt.write_dataset(batch(1, 0), root)
    _commit_meanwhile(monkeypatch, lambda: rcfmt.write_dataset(batch(2, 0), root, mode="overwrite"))
    with pytest.raises(rcfmt.CommitConflictError):
        rcfmt.write_dataset(batch(3, 0), root, mode="overwrite")
    assert assert_consistent(rcfmt.dataset(root)) == {2000}


def test_append_rebases_onto_a_concurrent_overwrite(tmp_path, monkeypatch):
    root = str(tmp_path)
    rcfmt.write_dataset(batch(1, 0), root)
    _commit_meanwhile(monkeypatch, lambda: rcfmt.write_dataset(batch(2, 0), root, mode="overwrite"))
    ds = rcfmt.write_dataset(batch(3, 0), root)
    assert ds.version == 3 and assert_consistent(ds) == {2000, 3000}


def test_append_conflicts_when_a_concurrent_overwrite_changed_the_schema(tmp_path, monkeypatch):
    root = str(tmp_path)
    rcfmt.write_dataset(batch(1, 0), root)
    _commit_meanwhile(monkeypatch, lambda: rcfmt.write_dataset(pa.table({"other": [1.5]}), root, mode="overwrite"))
    with pytest.raises(rcfmt.CommitConflictError, match="changed the schema"):
        rcfmt.write_dataset(batch(3, 0), root)
    ds = rcfmt.dataset(root)
    assert ds.version == 2 and ds.schema.names == ["other"]
    old = {f.relpath for f in rcfmt.dataset(root, version=1).files}
    assert _data_files(root) == {f.relpath for f in ds.files} | old  # the loser's files are gone


def test_racing_overwrites_in_threads(tmp_path):
    root = str(tmp_path)
    rcfmt.write_dataset(batch(0, 0), root)
    barrier = threading.Barrier(4)
    results = []

    def overwrite(w):
        barrier.wait()
        try:
            rcfmt.write_dataset(batch(w, 1), root, mode="overwrite")
            results.append(("ok", w))
        except rcfmt.CommitConflictError:
            results.append(("conflict", w))

    threads = [threading.Thread(target=overwrite, args=(w,)) for w in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [w for r, w in results if r == "ok"]
    assert len(results) == 4 and len(winners) >= 1
    ds = rcfmt.dataset(root)
    # each winner committed one version on top of the one it read: the last is visible whole
    assert ds.version == 1 + len(winners)
    (tag,) = assert_consistent(ds)
    assert tag in {w * 1000 + 1 for w in winners}
    referenced = set()
    for v in log.list_versions(root):
        referenced |= {f.relpath for f in rcfmt.dataset(root, version=v).files}
    assert _data_files(root) == referenced  # losers left no files


# ---------------------------------------------------------------- failures and crashes
def test_failure_while_writing_leaves_nothing(tmp_path):
    root = str(tmp_path)
    rcfmt.write_dataset(batch(1, 0), root)
    before = _all_files(root)

    def batches():
        yield batch(2, 0).to_batches()[0]
        raise RuntimeError("source failed mid-write")

    with pytest.raises(RuntimeError, match="mid-write"):
        rcfmt.write_dataset(batches(), root, target_file_rows=5)
    assert _all_files(root) == before


@pytest.mark.parametrize("where", ["writing", "commit"])
def test_a_failed_first_write_leaves_no_skeleton(tmp_path, monkeypatch, where):
    """A first write that fails removes the directories it made: a new path does not
    exist afterwards, and a plain directory gains no ``_rcfmt/`` (under which its files
    named like a writer's would read as uncommitted)."""
    new, plain = tmp_path / "new" / "ds", tmp_path / "plain"
    plain.mkdir()
    rcfmt.write_table(pa.table({"id": [1, 2]}), plain / "part-0123456789abcdef-00000.rcfmt")

    def batches():
        yield pa.record_batch({"id": pa.array([3], pa.int64())})
        if where == "writing":
            raise RuntimeError("source failed")

    if where == "commit":
        def boom(*args, **kwargs):
            raise RuntimeError("source failed")
        monkeypatch.setattr(dataset_commit, "write_index_file", boom)
    for root in (new, plain):
        with pytest.raises(RuntimeError, match="source failed"):
            rcfmt.write_dataset(batches(), str(root))
    assert not (tmp_path / "new").exists()
    assert [p.name for p in plain.iterdir()] == ["part-0123456789abcdef-00000.rcfmt"]
    assert rcfmt.dataset(str(plain)).read().column("id").to_pylist() == [1, 2]


def test_a_discarded_distributed_first_write_leaves_no_skeleton(tmp_path):
    """What Spark's abort does (WritePlan.staging_dir, then discard) leaves a plain
    directory as it was: readable, all its rows."""
    from rcfmt.dataset.writer import begin_write

    plain = tmp_path / "plain"
    plain.mkdir()
    rcfmt.write_table(pa.table({"id": [1, 2]}), plain / "part-0123456789abcdef-00000.rcfmt")
    plan = begin_write(str(plain), pa.schema([("id", pa.int64())]))
    staging = plan.staging_dir("spark-job")
    task = os.path.join(staging, "task-00000-0")
    os.makedirs(task)
    rcfmt.write_table(pa.table({"id": [3]}), os.path.join(task, "part-fedcba9876543210-00000.rcfmt"))
    plan.discard(task)
    plan.discard(staging)
    assert [p.name for p in plain.iterdir()] == ["part-0123456789abcdef-00000.rcfmt"]
    assert rcfmt.dataset(str(plain)).read().column("id").to_pylist() == [1, 2]


def test_failure_during_commit_removes_published_files(tmp_path, monkeypatch):
    root = str(tmp_path)
    rcfmt.write_dataset(batch(1, 0), root)
    before = _all_files(root)

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(dataset_commit, "write_index_file", boom)
    with pytest.raises(OSError, match="disk full"):
        rcfmt.write_dataset(batch(2, 0), root, partition_by=None)
    assert _all_files(root) == before
    assert assert_consistent(rcfmt.dataset(root)) == {1000}


CRASH = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    import pyarrow as pa
    import rcfmt
    from rcfmt.dataset import log, writer
    stage = sys.argv[1]
    if stage == "before-link":
        original = log.publish_version
        def crash(*a, **k):
            os._exit(17)   # data files published, complete index written, not linked
        log.publish_version = crash
    elif stage == "mid-write":
        original = writer.FileSetWriter._finish
        calls = []
        def crash(self, key):
            calls.append(key)
            if len(calls) == 2:
                os._exit(17)  # one file staged, the second being written
            return original(self, key)
        writer.FileSetWriter._finish = crash
    t = pa.table({{"tag": pa.array([7] * 10, pa.int64()), "i": pa.array(range(10), pa.int32())}})
    rcfmt.write_dataset(t, sys.argv[2], target_file_rows=4)
""")


@pytest.mark.parametrize("stage", ["before-link", "mid-write"])
def test_crash_between_data_write_and_commit_changes_nothing(tmp_path, stage):
    root = str(tmp_path / "d")
    rcfmt.write_dataset(batch(1, 0), root)
    before = rcfmt.dataset(root)
    proc = subprocess.run([sys.executable, "-c", CRASH.format(root=ROOT), stage, root], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 17, proc.stderr
    after = rcfmt.dataset(root)
    assert after.version == before.version == 1
    assert assert_consistent(after) == {1000}
    committed = ({f.relpath for f in after.files} | {os.path.relpath(log.version_path(root, 1), root)}
                 | {os.path.relpath(log.hint_path(root), root)})  # (the version hint of version 1)
    leftovers = _all_files(root) - committed
    assert leftovers  # the crash left garbage behind, invisible to readers ...
    # ... which vacuum removes
    removed = after.vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert removed
    assert _all_files(root) == committed
    # and the dataset still takes commits
    assert rcfmt.write_dataset(batch(2, 0), root).version == 2


def test_vacuum_keeps_recent_and_referenced_files(tmp_path):
    root = str(tmp_path)
    rcfmt.write_dataset(batch(1, 0), root)
    rcfmt.write_dataset(batch(2, 0), root, mode="overwrite")
    assert rcfmt.dataset(root).vacuum() == []  # everything is younger than an hour
    assert rcfmt.dataset(root, version=1).num_rows == ROWS
    removed = rcfmt.dataset(root).vacuum(retention_seconds=0, dry_run=True)
    assert len(removed) == 2 and rcfmt.dataset(root, version=1).num_rows == ROWS


def test_link_is_create_if_absent(tmp_path):
    root = str(tmp_path)
    rcfmt.write_dataset(batch(1, 0), root)
    tmp = os.path.join(log.tmp_dir(root), "x.rcfmt")
    with open(tmp, "wb") as fh:
        fh.write(b"junk")
    assert log.publish_version(root, 1, tmp) is False  # version 1 exists: refused, tmp removed
    assert not os.path.exists(tmp)
    assert rcfmt.dataset(root).num_rows == ROWS


def _optimizer(root, stop_file, out):
    """Optimize (rewrite commits) in a loop until ``stop_file`` exists, at least once (a
    process that starts late on a busy machine still counts); count outcomes."""
    done = conflicts = 0
    while True:
        try:
            rcfmt.dataset(root).optimize(["tag"], force=True, target_file_rows=200)
            done += 1
        except rcfmt.CommitConflictError:
            conflicts += 1
        if os.path.exists(stop_file):
            break
    with open(out, "w") as f:
        f.write(f"{done} {conflicts}")


def _reader(root, stop_file, out):
    """Read the latest version in a loop, at least once: every commit whole, versions
    never go back."""
    last, reads, bad = 0, 0, []
    while True:
        ds = rcfmt.dataset(root)
        t = ds.read()
        tags, counts = np.unique(t["tag"].to_numpy(), return_counts=True)
        if not (counts == ROWS).all() or ds.version < last:
            bad.append(ds.version)
        last, reads = ds.version, reads + 1
        if os.path.exists(stop_file):
            break
    with open(out, "w") as f:
        f.write(f"{reads} {bad}")


APPENDS_PER_WRITER = 30  # (50 took ~50 s of CI on 2 cores; 30 still races the optimizers throughout)


def test_four_writers_an_optimizer_and_readers(tmp_path):
    """4 processes x 30 appends, two concurrent optimize loops and a reader process: every
    committed append is present exactly once, every version stays readable, and an
    optimizer either commits (rebased onto the appends) or loses with CommitConflictError
    (the other optimizer rewrote its files first)."""
    root, stop = str(tmp_path / "ds"), str(tmp_path / "stop")
    rcfmt.write_dataset(batch(99, 0), root)
    ctx = multiprocessing.get_context("spawn")
    writers = [ctx.Process(target=_process_appender, args=(root, w, APPENDS_PER_WRITER)) for w in range(4)]
    side = [ctx.Process(target=_optimizer, args=(root, stop, str(tmp_path / f"opt{k}"))) for k in range(2)]
    side.append(ctx.Process(target=_reader, args=(root, stop, str(tmp_path / "read"))))
    for p in side + writers:
        p.start()
    for p in writers:
        p.join(600)
        assert p.exitcode == 0
    open(stop, "w").close()
    for p in side:
        p.join(600)
        assert p.exitcode == 0
    ds = rcfmt.dataset(root)
    assert assert_consistent(ds) == {99000} | {w * 1000 + s for w in range(4) for s in range(APPENDS_PER_WRITER)}
    assert ds.num_rows == ROWS * (1 + 4 * APPENDS_PER_WRITER)  # exactly once each
    counts = [tuple(map(int, open(tmp_path / f"opt{k}").read().split())) for k in range(2)]
    optimized, conflicts = sum(c[0] for c in counts), sum(c[1] for c in counts)
    reads, bad = open(tmp_path / "read").read().split(" ", 1)
    assert bad == "[]" and int(reads) > 0
    assert optimized + conflicts > 0
    versions = log.list_versions(root)
    assert versions == list(range(1, len(versions) + 1))
    assert len(versions) == 1 + 4 * APPENDS_PER_WRITER + optimized  # one version per append and per optimize
    for v in versions:  # every version stays readable, each commit whole
        assert_consistent(rcfmt.dataset(root, version=v))


def test_files_of_an_uncommitted_first_write_are_neither_read_nor_adopted(tmp_path):
    """A first write_dataset publishes its files, then commits version 1. Until then (or
    forever, if it crashed in between) its files must not be read, nor adopted by a
    concurrent first append: that made one append's rows appear twice (its files
    adopted by another writer, then committed again on rebase), or rows of a write
    that failed appear. Plain files a user put in the directory are still adopted."""
    root = tmp_path / "ds"
    done = tmp_path / "done"
    rcfmt.write_dataset(batch(1, 0), done)
    os.makedirs(root / "_rcfmt" / "_staging")  # a writer was here and published, then died
    for k, f in enumerate(rcfmt.dataset(done).files):
        os.link(f.path, root / f"part-0123456789abcdef-{k:05d}.rcfmt")
    rcfmt.write_table(batch(2, 0), root / "users-own.rcfmt")
    assert assert_consistent(rcfmt.dataset(root)) == {2000}
    rcfmt.write_dataset(batch(3, 0), root)
    ds = rcfmt.dataset(root)
    assert assert_consistent(ds) == {2000, 3000}
    assert ds.num_rows == 2 * ROWS


@pytest.mark.parametrize("retention", [-1, -0.5, float("nan"), float("inf"), "soon", None, True])
def test_vacuum_refuses_a_retention_that_is_not_a_duration(tmp_path, retention):
    """A negative retention would reach files younger than now (a running writer's);
    NaN would compare with nothing: both are refused, nothing deleted."""
    root = str(tmp_path / "d")
    rcfmt.write_dataset(pa.table({"a": [1]}), root)
    rcfmt.write_dataset(pa.table({"a": [2]}), root, mode="overwrite")
    with pytest.raises(rcfmt.InvalidOptionError, match="retention_seconds must be a finite number"):
        rcfmt.dataset(root).vacuum(retention_seconds=retention)
    assert len(rcfmt.dataset(root).history()) == 2 and len(list(Path(root).glob("*.rcfmt"))) == 2


@pytest.mark.parametrize("target_file_rows", [0, -1, 2.5])
def test_a_write_refused_for_its_options_leaves_nothing(tmp_path, target_file_rows):
    """The option checks come before the staging directory is made: an indexed dataset
    keeps no leftover, and a plain directory gains no ``_rcfmt/`` (which would make its
    files named like a writer's read as uncommitted)."""
    indexed, plain = tmp_path / "indexed", tmp_path / "plain"
    rcfmt.write_dataset(pa.table({"id": [1, 2]}), str(indexed))
    plain.mkdir()
    rcfmt.write_table(pa.table({"id": [1, 2]}), plain / "part-0123456789abcdef-00000.rcfmt")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for root in (indexed, plain):
        with pytest.raises(rcfmt.InvalidOptionError, match="target_file_rows"):
            rcfmt.write_dataset(pa.table({"id": [3]}), str(root), target_file_rows=target_file_rows)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert rcfmt.dataset(str(plain)).read().column("id").to_pylist() == [1, 2]


@pytest.mark.parametrize("first", ["overwrite", "append"])
def test_a_first_write_does_not_adopt_files_another_first_write_published_meanwhile(tmp_path, monkeypatch, first):
    """Two first writes into an empty directory: B finds no ``_rcfmt/`` and walks the
    directory while A publishes its files (not committed yet). B must not adopt them:
    it looks again and commits its own rows only. Before, B's version 1 listed A's
    files; A (an overwrite) then lost the race and deleted them, leaving version 1
    naming missing files (an append listed them twice)."""
    import types

    from rcfmt.dataset import snapshot

    root = str(tmp_path / "ds")
    os.makedirs(root)
    a_published, b_done = threading.Event(), threading.Event()
    outcome = {}
    real_latest = dataset_commit.log.latest_version

    def latest_version(r):  # A has published its files; it builds its version only after B is done
        if threading.current_thread().name == "writer-a" and not a_published.is_set():
            a_published.set()
            b_done.wait(30)
        return real_latest(r)

    def writer_a():
        try:
            rcfmt.write_dataset(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), root, mode=first)
            outcome["a"] = "committed"
        except rcfmt.CommitConflictError:
            outcome["a"] = "conflict"

    thread_a = threading.Thread(target=writer_a, name="writer-a")
    real_os = snapshot.os

    class WalkAfterA(types.ModuleType):  # B, between its look for _rcfmt/ and its walk, waits for A's files
        path = real_os.path

        def __getattr__(self, name):
            return getattr(real_os, name)

        def walk(self, top, *a, **k):
            if not thread_a.is_alive() and not a_published.is_set():
                thread_a.start()
                assert a_published.wait(30)
            return real_os.walk(top, *a, **k)

    monkeypatch.setattr(dataset_commit.log, "latest_version", latest_version)
    monkeypatch.setattr(snapshot, "os", WalkAfterA("os"))
    assert rcfmt.write_dataset(pa.table({"id": pa.array([10, 20], pa.int64())}), root).version == 1  # writer B
    monkeypatch.setattr(snapshot, "os", real_os)
    b_done.set()
    thread_a.join(60)
    ds = rcfmt.dataset(root)
    ids = sorted(ds.read()["id"].to_pylist())
    if first == "overwrite":
        assert outcome["a"] == "conflict" and ds.version == 1 and ids == [10, 20]
    else:
        assert outcome["a"] == "committed" and ds.version == 2 and ids == [1, 2, 3, 10, 20]
        assert ds.num_rows == 5 and len(ds.snapshot.paths) == 2


def _one(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64())})


def test_vacuum_after_an_interrupted_vacuum_passes_over_chains_whose_checkpoint_is_gone(tmp_path, monkeypatch):
    """A vacuum stopped after it deleted the checkpoint of a chain leaves changes versions
    no one can read: the next vacuum, whatever its retention, removes them rather than
    raising (before: CorruptFileError on every vacuum until one with a shorter retention);
    history lists what is left."""
    root = str(tmp_path / "d")
    for i in range(1, 6):
        rcfmt.write_dataset(_one(i), root)  # v1 checkpoint, v2-v5 its chain
    rcfmt.dataset(root).checkpoint()  # v6
    for i in range(7, 9):
        rcfmt.write_dataset(_one(i), root)  # v7, v8
    expected = sorted(rcfmt.dataset(root).read()["id"].to_pylist())
    real = os.unlink
    calls = []

    def killed_at_the_second(p, *a, **k):
        calls.append(p)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(p, *a, **k)

    monkeypatch.setattr(os, "unlink", killed_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        rcfmt.dataset(root).vacuum(retention_seconds=0, enforce_retention_duration=False)
    monkeypatch.undo()
    assert log.list_versions(root) == [2, 3, 4, 5, 6, 7, 8]
    assert [h["version"] for h in rcfmt.dataset(root).history()] == [2, 3, 4, 5, 6, 7, 8]
    assert rcfmt.dataset(root).vacuum(retention_seconds=3600, dry_run=True)
    rcfmt.dataset(root).vacuum(retention_seconds=3600)
    assert log.list_versions(root) == [6, 7, 8]
    assert sorted(rcfmt.dataset(root).read()["id"].to_pylist()) == expected
    assert rcfmt.dataset(root, version=6).count_rows() == 5


@pytest.mark.parametrize("area", ["_staging", "_tmp", "_scans", "deletions", "runs"])
def test_vacuum_never_follows_a_link_out_of_the_dataset(tmp_path, area):
    """An area of ``_rcfmt/`` that is a symbolic link to a directory elsewhere is not
    listed, and a link inside an area is removed as a link: vacuum deletes nothing
    outside the dataset (before: every old entry of the link's target, trees too)."""
    root = str(tmp_path / "ds")
    rcfmt.write_dataset(_one(1), root)
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    old = time.time() - 7200
    for p in (victim / "keep.txt", victim / "sub" / "data.rcfmt"):
        p.write_text("keep me")
        os.utime(p, (old, old))
    os.utime(victim / "sub", (old, old))
    d = os.path.join(root, "_rcfmt", area)
    if os.path.isdir(d):
        os.rmdir(d)
    os.symlink(victim, d)
    rcfmt.dataset.vacuum(root, retention_seconds=3600)
    assert sorted(os.listdir(victim)) == ["keep.txt", "sub"] and os.listdir(victim / "sub") == ["data.rcfmt"]
    os.unlink(d)
    os.makedirs(os.path.join(root, "_rcfmt", "_staging"), exist_ok=True)
    link = os.path.join(root, "_rcfmt", "_staging", "old-writer")
    os.symlink(victim, link)
    os.utime(link, (old, old), follow_symlinks=False)
    assert link in rcfmt.dataset.vacuum(root, retention_seconds=3600)
    assert not os.path.lexists(link) and os.listdir(victim / "sub") == ["data.rcfmt"]
    assert rcfmt.dataset(root).read()["id"].to_pylist() == [1]


def test_vacuum_passes_over_a_version_another_vacuum_removed_meanwhile(tmp_path, monkeypatch):
    """Two vacuums at once: the one that listed first finds a version it keeps deleted by
    the other, and goes on without it (before: a raw FileNotFoundError)."""
    vacuum_module = sys.modules["rcfmt.dataset.vacuuming"]
    root = str(tmp_path / "d")
    rcfmt.write_dataset(_one(1), root)
    rcfmt.dataset(root).checkpoint()  # v2: version 1 is needed by no later version
    for i in range(3, 5):
        rcfmt.write_dataset(_one(i), root)
    real = vacuum_module._with_checkpoint

    def the_other_vacuum_ran(r, versions, keep):
        out = real(r, versions, keep)
        os.unlink(log.version_path(root, out[0]))
        return out

    monkeypatch.setattr(vacuum_module, "_with_checkpoint", the_other_vacuum_ran)
    assert rcfmt.dataset(root).vacuum(retention_seconds=3600) == []
    monkeypatch.undo()
    assert log.list_versions(root) == [2, 3, 4]
    assert sorted(rcfmt.dataset(root).read()["id"].to_pylist()) == [1, 3, 4]


def test_vacuum_refuses_a_chain_that_names_a_later_checkpoint(tmp_path):
    """A changes version whose info names a later version as its checkpoint (forged or
    corrupt) is a CorruptFileError, before anything is deleted: it made vacuum delete
    the recent versions and the checkpoint the latest version is read from."""
    from index_forgery import edit_version_info

    root = str(tmp_path / "d")
    for i in range(1, 7):
        rcfmt.write_dataset(_one(i), root)  # v1 checkpoint, v2-v6 its chain

    def later(info):
        info["checkpoint"]["version"] = 5
        return info

    edit_version_info(root, 3, later)
    old = time.time() - 7200
    for v in (1, 2, 3):  # (1 and 2 superseded long ago: vacuum would keep from 3)
        os.utime(log.version_path(root, v), (old, old))
    files = sorted(os.listdir(os.path.join(root, "_rcfmt")))
    with pytest.raises(rcfmt.CorruptFileError, match="names version 5 as its checkpoint"):
        rcfmt.dataset.vacuum(root, retention_seconds=3600)
    assert sorted(os.listdir(os.path.join(root, "_rcfmt"))) == files
    assert sorted(rcfmt.dataset(root).read()["id"].to_pylist()) == [1, 2, 3, 4, 5, 6]


def test_a_commit_whose_read_version_was_vacuumed_is_a_conflict(tmp_path):
    """An engine's commit (Spark's: the plan reaches its commit without the snapshot it
    read) that must rebase, when a vacuum removed its read version while it ran: a clear
    CommitConflictError (before: a raw FileNotFoundError)."""
    from rcfmt.dataset import commit

    root = str(tmp_path / "d")
    ds = rcfmt.write_dataset(_one(1), root)
    rcfmt.dataset(root).checkpoint()  # v2
    old = time.time() - 7200
    for v in (1, 2):  # (1 superseded by 2 long ago)
        os.utime(log.version_path(root, v), (old, old))
    rcfmt.dataset.vacuum(root, retention_seconds=3600)
    assert log.list_versions(root) == [2]
    with pytest.raises(rcfmt.CommitConflictError, match="started from version 1, which a vacuum removed"):
        commit(root, [], mode="append", read_version=1, data_schema=ds.snapshot.data_schema,
               partitioning=ds.snapshot.partitioning, txn_id="t")
    assert log.list_versions(root) == [2]


def test_a_commit_from_a_held_version_looks_the_latest_up_when_that_version_is_gone(tmp_path, monkeypatch):
    """A delete from a Dataset held since version 4, when others committed 5 and 6 and a
    vacuum removed 4 and 5: the commit must not create 5 again below the latest (its
    first attempt skipped the lookup). Its own base is served from memory, as a cached
    chain is on object stores."""
    root = str(tmp_path / "d")
    for i in range(4):
        rcfmt.write_dataset(pa.table({"a": pa.array([i, 10 + i], pa.int64())}), root)
    ds = rcfmt.dataset(root)
    assert ds.count_rows(filter=rcfmt.col("a") == 1) == 1  # (the statistics the delete needs: loaded)
    rcfmt.write_dataset(pa.table({"a": pa.array([100], pa.int64())}), root)  # 5
    rcfmt.dataset(root).checkpoint()  # 6
    rcfmt.dataset.vacuum(root, retention_seconds=0, enforce_retention_duration=False)
    assert log.list_versions(root) == [6]
    out = ds.delete(rcfmt.col("a") == 1)
    assert out.version == 7 and log.list_versions(root) == [6, 7]
    assert sorted(rcfmt.dataset(root).read()["a"].to_pylist()) == [0, 2, 3, 10, 11, 12, 13, 100]


def test_a_commit_refuses_version_info_readers_would_refuse(tmp_path):
    """An engine's operation_info with a count that is not one would make every reader
    refuse the version: refused before anything is committed."""
    from rcfmt.dataset import commit

    root = str(tmp_path / "d")
    ds = rcfmt.write_dataset(_one(1), root)
    with pytest.raises(rcfmt.InvalidOptionError, match="rows_inserted"):
        commit(root, [], mode="append", read_version=1, data_schema=ds.snapshot.data_schema,
               partitioning=ds.snapshot.partitioning, txn_id="t", operation_info={"rows_inserted": None})
    assert log.list_versions(root) == [1] and rcfmt.dataset(root).read()["id"].to_pylist() == [1]


def test_history_passes_over_versions_vacuumed_since_the_listing(tmp_path, monkeypatch):
    root = str(tmp_path / "d")
    for i in range(3):
        rcfmt.write_dataset(_one(i), root)
    real = log.list_versions
    monkeypatch.setattr(log, "list_versions", lambda r: [0] + real(r))  # (a version gone since it was listed)
    assert [h["version"] for h in rcfmt.dataset(root).history()] == [1, 2, 3]


def test_an_append_whose_base_chain_was_vacuumed_meanwhile_commits(tmp_path):
    """An append read version 17 (a chain of 16 changes, which its commit merges into a
    run); meanwhile another process checkpointed and vacuumed the old versions. The
    append writes a checkpoint instead of merging files that are gone, loses the race
    for version 18 and rebases (before: FileNotFoundError of version 2)."""
    root = str(tmp_path / "ds")
    for i in range(1, 18):
        rcfmt.write_dataset(_one(i), root)
    old = time.time() - 7200  # (last written two hours ago: every version past the retention)
    for d, _, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(d, n), (old, old))
    other = f"import rcfmt; rcfmt.dataset({root!r}).checkpoint(); rcfmt.dataset({root!r}).vacuum(3600)"

    def batches():
        yield _one(100)
        subprocess.run([sys.executable, "-c", other], check=True, cwd=ROOT, timeout=120)
        yield _one(101)

    assert rcfmt.write_dataset(batches(), root, target_file_rows=1).version == 19
    assert sorted(rcfmt.dataset(root).read()["id"].to_pylist()) == list(range(1, 18)) + [100, 101]


def test_vacuum_racing_the_first_commit_keeps_its_files(tmp_path, monkeypatch):
    """Vacuum listed no version, then the first version was committed before it walked
    the directory: the files it walks are that version's, not a crashed writer's, and
    stay."""
    root = str(tmp_path / "ds")
    rcfmt.write_dataset(pa.table({"x": [1, 2, 3]}), root)
    real = log.list_versions
    calls = []

    def committed_after_the_first_listing(r):
        calls.append(r)
        return [] if len(calls) == 1 else real(r)

    monkeypatch.setattr(log, "list_versions", committed_after_the_first_listing)
    rcfmt.dataset.vacuum(root, retention_seconds=0, enforce_retention_duration=False)
    monkeypatch.undo()
    assert rcfmt.dataset(root).read()["x"].to_pylist() == [1, 2, 3]
