"""The version hint (``_rcfmt/_last_version``, docs/DATASET.md section 4): a place to start
looking for the latest version, never trusted blindly. A stale, missing, garbage or
past-the-end hint, and one racing a commit, all give the right latest version; opening
and committing never list ``_rcfmt/`` and cost the same lookups at any version count."""
from __future__ import annotations

import os
import sys
import threading

from urllib.parse import unquote

import pyarrow as pa
import pytest

import rcfmt
from rcfmt.dataset import commits as dataset_commits
from store_commits import run_writers_and_a_reader
from rcfmt.dataset import log
from rcfmt.dataset import snapshot as dataset_snapshot
from index_forgery import every_version_a_checkpoint
from rcfmt.dataset import writer as dataset_writer


def batch(i: int, rows: int = 5) -> pa.Table:
    return pa.table({"id": pa.array(range(i * rows, (i + 1) * rows), pa.int64()), "w": pa.array([i] * rows)})


def make(root: str, versions: int) -> None:
    for i in range(versions):
        assert rcfmt.write_dataset(batch(i), root).version == i + 1


def set_hint(root: str, raw: bytes | None) -> None:
    path = log.hint_path(root)
    if raw is None:
        os.unlink(path)
    else:
        with open(path, "wb") as f:
            f.write(raw)


def assert_latest(root: str, version: int) -> None:
    assert log.latest_version(root) == version
    ds = rcfmt.dataset(root)
    assert ds.version == version and ds.num_rows == 5 * version
    assert sorted(ds.read().column("id").to_pylist()) == list(range(5 * version))


def test_each_commit_writes_the_hint(tmp_path):
    root = str(tmp_path / "d")
    make(root, 3)
    size = os.path.getsize(log.version_path(root, 3))
    assert log.read_hint(root) == (3, size)
    with open(log.hint_path(root), "rb") as f:
        assert f.read() == f"3 {size}\n".encode()


@pytest.mark.parametrize("hint", [1, 2, 5])
def test_a_stale_hint_walks_forward(tmp_path, hint):
    root = str(tmp_path / "d")
    make(root, 6)
    set_hint(root, f"{hint}\n".encode())
    assert_latest(root, 6)
    set_hint(root, f"{hint} {os.path.getsize(log.version_path(root, hint))}\n".encode())
    assert_latest(root, 6)


def test_a_hint_stale_by_more_than_the_walk_is_listed(tmp_path, monkeypatch):
    root = str(tmp_path / "d")
    monkeypatch.setattr(log, "MAX_HINT_WALK", 2)
    make(root, 6)
    set_hint(root, b"1\n")
    listed = []
    real = log.version_sizes
    monkeypatch.setattr(log, "version_sizes", lambda r: listed.append(r) or real(r))
    assert_latest(root, 6)
    assert listed  # (the walk gave up: one listing)


def test_a_missing_hint_is_listed(tmp_path):
    root = str(tmp_path / "d")
    make(root, 4)
    set_hint(root, None)
    assert_latest(root, 4)
    assert rcfmt.write_dataset(batch(4), root).version == 5  # a commit writes it again
    assert log.read_hint(root)[0] == 5


@pytest.mark.parametrize("raw", [b"9\n", b"9", b"10 1234\n", b"4 99999\n", b"4 1\n", b"99999999999999999999\n"])
def test_a_hint_past_the_last_version_or_with_a_wrong_size(tmp_path, raw):
    """A hint naming a version that does not exist (or the last one with another size:
    its index is read as that size says, which fails) falls back to the listing."""
    root = str(tmp_path / "d")
    make(root, 4)
    set_hint(root, raw)
    assert_latest(root, 4)
    assert rcfmt.write_dataset(batch(4), root).version == 5
    assert log.read_hint(root)[0] == 5


@pytest.mark.parametrize("raw", [b"", b"\n", b"garbage", b"0\n", b"-3\n", b"3.0\n", b"3 abc\n", b" 3\n", b"3\n\n",
                                 b"\xff\xfe\x00", b"3" * 30, b"v00000000000000000003.rcfmt"])
def test_a_garbage_hint_is_ignored(tmp_path, raw):
    root = str(tmp_path / "d")
    make(root, 4)
    set_hint(root, raw)
    assert log.read_hint(root) is None
    assert_latest(root, 4)


def test_a_hint_that_is_a_directory_is_ignored(tmp_path):
    root = str(tmp_path / "d")
    make(root, 2)
    set_hint(root, None)
    os.mkdir(log.hint_path(root))
    assert log.read_hint(root) is None
    assert_latest(root, 2)
    assert rcfmt.write_dataset(batch(2), root).version == 3  # (the hint cannot be written: the commit stands)
    assert_latest(root, 3)


def test_a_hint_that_is_huge_or_a_fifo_is_not_read_whole(tmp_path):
    """A hint is read 64 bytes at most, and only from a regular file: a forged huge one
    (sparse here) costs no memory, a FIFO does not block the open."""
    import tracemalloc

    root = str(tmp_path / "d")
    make(root, 3)
    set_hint(root, None)
    with open(log.hint_path(root), "wb") as f:
        f.write(b"2 ")
        f.truncate(1 << 30)
    tracemalloc.start()
    try:
        assert log.read_hint(root) is None
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
    assert_latest(root, 3)
    os.unlink(log.hint_path(root))
    os.mkfifo(log.hint_path(root))
    found = []
    reader = threading.Thread(target=lambda: found.append(log.read_hint(root)), daemon=True)
    reader.start()
    reader.join(30)
    if reader.is_alive():  # (a blocked open: unblock it with a writer, then fail)
        with open(log.hint_path(root), "wb"):
            pass
        pytest.fail("reading a FIFO hint blocked")
    assert found == [None]
    assert_latest(root, 3)


def test_a_hint_naming_a_vacuumed_version(tmp_path, monkeypatch):
    every_version_a_checkpoint(monkeypatch)  # (vacuum keeps the versions a changes version is read from)
    root = str(tmp_path / "d")
    make(root, 5)
    hint = open(log.hint_path(root), "rb").read()
    set_hint(root, b"2\n")
    removed = rcfmt.dataset(root).vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert log.version_path(root, 2) in removed and log.list_versions(root) == [5]
    assert open(log.hint_path(root), "rb").read() == hint  # vacuum superseded the stale hint
    set_hint(root, b"2\n")  # (a writer's late hint)
    assert_latest(root, 5)


def test_vacuum_removes_the_oldest_versions_only_and_crashed_hint_writes(tmp_path, monkeypatch):
    """Versions stay contiguous (the walk from a hint relies on it): a version that was
    the latest within the retention (the next one is recent) keeps every later one, even
    one whose mtime says it is old."""
    every_version_a_checkpoint(monkeypatch)  # (vacuum keeps the versions a changes version is read from)
    root = str(tmp_path / "d")
    make(root, 5)
    for v in (1, 2, 4):
        os.utime(log.version_path(root, v), (1, 1))  # old, but 3 is not: 2 was the latest till then, 4 is kept
    crashed = os.path.join(log.meta_dir(root), f".{log.HINT}.0123456789ab.rcfmt-tmp")
    with open(crashed, "wb") as f:
        f.write(b"5")
    os.utime(crashed, (1, 1))
    removed = rcfmt.dataset(root).vacuum(retention_seconds=60, enforce_retention_duration=False)
    assert log.list_versions(root) == [2, 3, 4, 5]
    assert crashed in removed and not os.path.exists(crashed)
    assert_latest(root, 5)


def test_a_late_hint_from_a_writer_that_lost_the_race(tmp_path, monkeypatch):
    """Writer A commits version 2; before it writes its hint, writer B commits version 3
    and writes hint 3; then A writes hint 2. The hint goes back: readers walk forward."""
    root = str(tmp_path / "d")
    make(root, 1)
    real = log.write_hint
    order = []

    def late(r, version, size=None):
        if not order:
            order.append(version)
            monkeypatch.setattr(log, "write_hint", real)
            assert rcfmt.write_dataset(batch(2), root).version == 3  # writer B, hint 3
            order.append(log.read_hint(root)[0])
        real(r, version, size)  # writer A's hint 2, after B's

    monkeypatch.setattr(log, "write_hint", late)
    assert rcfmt.write_dataset(batch(1), root).version == 2
    assert order == [2, 3] and log.read_hint(root)[0] == 2
    assert_latest(root, 3)
    assert rcfmt.write_dataset(batch(3), root).version == 4  # a writer from a stale hint targets the right version
    assert_latest(root, 4)


def test_a_commit_whose_hint_write_is_lost(tmp_path, monkeypatch):
    """A crash between the version's link and the hint's write: readers and writers walk
    forward from the older hint."""
    root = str(tmp_path / "d")
    make(root, 2)
    monkeypatch.setattr(log, "write_hint", lambda *a, **k: None)
    make_from = 2
    for i in range(make_from, make_from + 3):
        assert rcfmt.write_dataset(batch(i), root).version == i + 1
    assert log.read_hint(root)[0] == 2
    assert_latest(root, 5)


def test_two_writers_racing_with_their_hints(tmp_path, monkeypatch):
    """Two appending writers planned on the same version: the loser rebases; hints are
    written in both orders; every version and row is found."""
    root = str(tmp_path / "d")
    make(root, 1)
    real_close = dataset_writer.FileSetWriter.close
    done = []

    def close_then_commit_meanwhile(self):
        files = real_close(self)
        if not done:
            done.append(True)
            monkeypatch.setattr(dataset_writer.FileSetWriter, "close", real_close)
            assert rcfmt.write_dataset(batch(1), root).version == 2  # the other writer wins version 2
        return files

    monkeypatch.setattr(dataset_writer.FileSetWriter, "close", close_then_commit_meanwhile)
    ds = rcfmt.write_dataset(batch(2), root)  # planned on version 1: loses version 2, rebases
    assert ds.version == 3 and ds.info["parent_version"] == 2
    assert log.read_hint(root)[0] == 3
    assert_latest(root, 3)


def test_threads_appending_and_reading_always_see_a_committed_version(tmp_path):
    root = str(tmp_path / "d")
    make(root, 1)

    def write(w):
        for k in range(6):
            rcfmt.write_dataset(batch(100 + 10 * w + k), root)

    def read():
        ds = rcfmt.dataset(root)
        assert ds.num_rows == 5 * ds.version and ds.read().num_rows == ds.num_rows
        return ds.version

    run_writers_and_a_reader(root, 3, write, read)
    assert log.latest_version(root) == 19 and rcfmt.dataset(root).num_rows == 5 * 19
    assert log.list_versions(root) == list(range(1, 20))


def test_time_travel(tmp_path):
    root = str(tmp_path / "d")
    make(root, 4)
    set_hint(root, b"garbage")
    assert rcfmt.dataset(root, version=2).num_rows == 10
    with pytest.raises(rcfmt.errors.InvalidOptionError, match="no version 7"):
        rcfmt.dataset(root, version=7)
    rcfmt.write_dataset(batch(0), root, mode="overwrite")
    assert rcfmt.dataset(root).num_rows == 5 and rcfmt.dataset(root, version=4).num_rows == 20


# ---------------------------------------------------------------- O(1): no listing of _rcfmt/
class _Lookups:
    """Counts listings of ``_rcfmt/`` and stats of the version files, however made."""

    def __init__(self, root: str, monkeypatch):
        self.meta = os.path.realpath(log.meta_dir(root))
        self.listings = 0
        self.stats = 0
        for name in ("listdir", "scandir"):
            real = getattr(os, name)

            def counted(path=".", _real=real):
                if isinstance(path, (str, bytes, os.PathLike)) and os.path.realpath(os.fsdecode(path)) == self.meta:
                    self.listings += 1
                return _real(path)
            monkeypatch.setattr(os, name, counted)
        real_stat = os.stat

        def stat(path, *a, _real=real_stat, **k):
            if isinstance(path, str) and os.path.dirname(path) == log.meta_dir(root):
                self.stats += 1
            return _real(path, *a, **k)
        monkeypatch.setattr(os, "stat", stat)
        real_sizes = log.version_sizes

        def sizes(r):
            self.listings += 1
            return real_sizes(r)
        monkeypatch.setattr(log, "version_sizes", sizes)

    def take(self) -> tuple[int, int]:
        out = (self.listings, self.stats)
        self.listings = self.stats = 0
        return out


def test_open_and_commit_do_not_list_the_metadata_directory(tmp_path, monkeypatch):
    """At any number of versions an open costs a read of the hint and a stat of the
    hint's version and of the next one, and no listing of ``_rcfmt/``; a commit the same
    lookups at 3 and at 40 versions. An open that reads a chain stats each version it
    takes as a run of one version (at most 15: they are merged every 16), to know it is
    the file its decoded changes were kept from."""
    root = str(tmp_path / "d")
    counts = _Lookups(root, monkeypatch)
    seen = {}
    for versions in (3, 40):
        while log.list_versions(root)[-1:] != [versions]:
            rcfmt.write_dataset(batch(len(log.list_versions(root))), root)
        counts.take()
        rcfmt.dataset(root).read()
        opened = counts.take()
        singles = sum(1 for first, last, *_ in rcfmt.dataset(root).snapshot.info["runs"] if first == last)
        counts.take()
        assert 1 <= singles <= 15
        # stats: the hint's version, the one after it, and the version again, whose changes
        # this process read before (its parts are kept while its file is the same), and
        # each version the chain takes as a run of one
        assert opened == (0, 3 + singles), (opened, singles)
        assert rcfmt.write_dataset(batch(versions), root).version == versions + 1
        committed = counts.take()
        assert committed[0] == 0, committed
        assert rcfmt.dataset(root, version=versions).version == versions  # time travel: a stat (and the kept one's)
        assert counts.take() == (0, 2)
        seen[versions] = committed
        os.unlink(log.version_path(root, versions + 1))  # (back to `versions` for the loop)
        set_hint(root, None)
    assert seen[3] == seen[40], seen


def test_one_read_of_the_index_per_append(tmp_path, monkeypatch):
    """write_dataset reads the latest index once (its plan; not at all when this process
    committed it last: the rows it wrote are kept) and its commit builds the next version
    from it; the Dataset it returns is the version it committed (no read). Reading a
    changes version reads it and its checkpoint (version 1 here), each once."""
    root = str(tmp_path / "d")
    make(root, 5)
    reads = []
    real = dataset_snapshot.read_snapshot

    def counted(r, version, *a, **k):
        reads.append(version)
        return real(r, version, *a, **k)

    monkeypatch.setattr(dataset_snapshot, "read_snapshot", counted)
    monkeypatch.setattr(dataset_commits, "read_snapshot", counted)
    monkeypatch.setattr(sys.modules["rcfmt.dataset.dataset"], "read_snapshot", counted)
    assert rcfmt.write_dataset(batch(5), root).version == 6
    assert reads == [], reads  # (version 5: this process committed it)
    dataset_snapshot._COMMITTED.clear()  # (another process committed it)
    reads.clear()
    assert rcfmt.write_dataset(batch(6), root).version == 7
    assert reads == [6, 1], reads
    path = log.version_path(root, 7)  # a version file replaced behind the writer's back is read again
    with open(path, "rb") as f:
        data = f.read()
    os.unlink(path)
    with open(path, "wb") as f:
        f.write(data)
    reads.clear()
    assert rcfmt.write_dataset(batch(7), root).version == 8
    assert reads == [7, 1], reads
    assert_latest(root, 8)


def test_check_relpath_runs_once_per_path(tmp_path, monkeypatch):
    root = str(tmp_path / "d")
    make(root, 5)
    calls = []
    real = dataset_snapshot.check_relpath
    monkeypatch.setattr(dataset_snapshot, "check_relpath", lambda rel, path=None: calls.append(rel) or real(rel, path))
    rcfmt.dataset(root)
    calls.clear()
    for _ in range(3):
        rcfmt.dataset(root)
    assert calls == []  # (every path was checked when this process first read it)
    dataset_snapshot._CHECKED_PATHS.clear()
    dataset_snapshot._CHAINS.clear()  # (a version read before is not checked again)
    rcfmt.dataset(root)
    rcfmt.dataset(root)
    assert len(calls) == 5


def test_a_forged_path_is_refused_at_every_read(tmp_path):
    """The once-per-path cache holds accepted paths only: a bad one is refused each time."""
    from rcfmt.errors import CorruptFileError

    for _ in range(2):
        with pytest.raises(CorruptFileError):
            dataset_snapshot.check_relpath("../outside.rcfmt")
    assert "../outside.rcfmt" not in dataset_snapshot._CHECKED_PATHS


# ---------------------------------------------------------------- S3: requests per append do not grow
def test_s3_requests_per_open_and_append_do_not_grow_with_versions():
    pytest.importorskip("moto.server")
    pytest.importorskip("boto3")
    from local_s3 import S3Proxy, s3_server

    with s3_server("hint-test") as (endpoint, _), S3Proxy(endpoint) as proxy:
        saved = os.environ["AWS_ENDPOINT_URL"]
        os.environ["AWS_ENDPOINT_URL"] = proxy.endpoint
        try:
            uri = "s3://hint-test/ds"
            per_append, per_open = {}, {}
            for i in range(25):
                proxy.reset_counts()
                assert rcfmt.write_dataset(batch(i), uri).version == i + 1
                requests = list(proxy.requests)
                listings = [r for r in requests if "list-type" in r[1] and "_rcfmt" in unquote(r[1])]
                assert not listings or i == 0, listings  # (the first commit: no hint yet)
                per_append[i + 1] = sorted(r[0] for r in requests)
                proxy.reset_counts()
                assert rcfmt.dataset(uri).version == i + 1  # (the new version: read once, then cached)
                first_open = [(r[0], r[1].rsplit("/", 1)[-1]) for r in proxy.requests]
                proxy.reset_counts()
                assert rcfmt.dataset(uri).version == i + 1
                per_open[i + 1] = [(r[0], r[1].rsplit("/", 1)[-1]) for r in proxy.requests]
            assert per_append[3] == per_append[25], (per_append[3], per_append[25])
            # the first open after an append reads the new version and nothing older (its
            # checkpoint and runs come from the cache); a warm reopen reads no index object
            assert sorted(first_open) == [("GET", "_last_version"), ("GET", "v00000000000000000025.rcfmt"),
                                          ("HEAD", "v00000000000000000026.rcfmt")], first_open
            assert per_open[25] == [("GET", "_last_version"), ("HEAD", "v00000000000000000026.rcfmt")]
            import boto3

            boto3.client("s3", endpoint_url=endpoint).put_object(Bucket="hint-test", Key="ds/_rcfmt/_last_version",
                                                                 Body=b"9" * (1 << 20))  # (forged: 1 MiB)
            proxy.reset_counts()
            assert rcfmt.dataset(uri).version == 25
            hint_reads = [r for r in proxy.requests if r[1].endswith("_last_version")]
            assert hint_reads and all(r[3] <= log.HINT_MAX_BYTES for r in hint_reads), hint_reads
        finally:
            os.environ["AWS_ENDPOINT_URL"] = saved


def test_vacuum_stops_at_a_local_version_it_cannot_delete(tmp_path, monkeypatch):
    """A version that cannot be unlinked stops vacuum there, with a StorageError (not
    the raw OSError), before any later version and any data file; one whose hint cannot
    be refreshed deletes nothing."""
    every_version_a_checkpoint(monkeypatch)
    root = str(tmp_path / "d")
    make(root, 5)
    rcfmt.write_dataset(batch(9), root, mode="overwrite")  # version 6: the data of 1-5 is unreferenced
    files_before = sorted(os.listdir(root))
    v3 = log.version_path(root, 3)
    real = os.unlink

    def refused(p, *a, **k):
        if p == v3:
            raise PermissionError(13, "Permission denied", p)
        return real(p, *a, **k)

    monkeypatch.setattr(os, "unlink", refused)
    with pytest.raises(rcfmt.StorageError, match=r"could not be deleted \(.*Permission denied.*\) \(after 2 older ones were\)"):
        rcfmt.dataset(root).vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert log.list_versions(root) == [3, 4, 5, 6] and sorted(os.listdir(root)) == files_before
    assert log.latest_version(root) == 6 and rcfmt.dataset(root, version=5).num_rows == 25
    monkeypatch.setattr(os, "unlink", real)
    set_hint(root, b"3\n")
    monkeypatch.setattr(log, "write_hint", lambda *a, **k: None)
    with pytest.raises(rcfmt.StorageError, match="could not be made to name version 6"):
        rcfmt.dataset(root).vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert log.list_versions(root) == [3, 4, 5, 6]
    monkeypatch.undo()
    rcfmt.dataset(root).vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert log.list_versions(root) == [6] and rcfmt.dataset(root).read()["w"].to_pylist() == [9] * 5
