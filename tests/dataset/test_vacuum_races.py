"""Vacuum beside readers and other vacuums: a version is retained from when it was
superseded; time travel to a version a vacuum removes meanwhile is "no such version";
a vacuum whose listing another vacuum outran finishes."""
import importlib
import os
import time

import pyarrow as pa
import pytest

import rcfmt
from rcfmt.dataset import log

dataset_module = importlib.import_module("rcfmt.dataset.dataset")  # (the package's `dataset` is a function)
snapshot_module = importlib.import_module("rcfmt.dataset.snapshot")
vacuum_module = importlib.import_module("rcfmt.dataset.vacuuming")


def _append(root, k):
    return rcfmt.write_dataset(pa.table({"id": pa.array(range(k * 10, k * 10 + 10), pa.int64())}), root)


def _age(root, versions, seconds=7200):
    old = time.time() - seconds
    for v in versions:
        os.utime(log.version_path(root, v), (old, old))


def test_the_latest_version_of_an_idle_table_is_retained_after_the_next_commit(tmp_path):
    """A table idle for two hours: a reader opens its latest version, a writer commits,
    then vacuum with an hour's retention runs. The version the reader holds was the
    latest a moment ago: it stays, with its files (it was removed as "older than the
    retention", and the reader failed)."""
    root = str(tmp_path / "d")
    for k in range(2):
        _append(root, k)
    rcfmt.dataset(root).checkpoint()  # version 3
    _age(root, [1, 2, 3])
    reader = rcfmt.dataset(root)
    assert reader.version == 3
    rcfmt.dataset(root).optimize()  # version 4: the files of 3 are replaced
    removed = rcfmt.dataset.vacuum(root, retention_seconds=3600)
    assert log.list_versions(root) == [3, 4]
    assert removed and all("_rcfmt" in p for p in removed)  # (versions 1 and 2 only: every file is version 3's)
    assert sorted(reader.read()["id"].to_pylist()) == list(range(20))
    assert sorted(rcfmt.dataset(root, version=3).read()["id"].to_pylist()) == list(range(20))


def test_time_travel_to_a_version_a_vacuum_removes_meanwhile_is_no_such_version(tmp_path, monkeypatch):
    """The version is looked up, then a vacuum removes it before its index is read: the
    same InvalidOptionError as for a version already gone (it was a raw FileNotFoundError)."""
    root = str(tmp_path / "d")
    for k in range(3):
        _append(root, k)
    rcfmt.write_dataset(pa.table({"id": pa.array([100], pa.int64())}), root, mode="overwrite")  # 4: a checkpoint
    real = dataset_module._version_size

    def vacuum_meanwhile(r, version):
        size = real(r, version)
        rcfmt.dataset.vacuum(r, 0, enforce_retention_duration=False)  # (another process's vacuum lands here)
        return size

    monkeypatch.setattr(dataset_module, "_version_size", vacuum_meanwhile)
    with pytest.raises(rcfmt.InvalidOptionError, match=r"has no version 2 any more .*versions: \[4\]"):
        rcfmt.dataset(root, version=2)


def test_a_vacuum_outrun_by_another_vacuum_finishes(tmp_path, monkeypatch):
    """Vacuum A keeps changes version 4 and the chain it is read from (1-3); vacuum B,
    with a shorter retention, has meanwhile removed the oldest of them. A took version
    4 for corrupt (its checkpoint missing) and failed on a healthy dataset; it now takes
    it as on its way out, as a version removed meanwhile."""
    root = str(tmp_path / "d")
    for k in range(4):  # 1 a checkpoint, 2-4 its chain
        _append(root, k)
    rcfmt.dataset(root).checkpoint()  # 5
    _age(root, [1, 2, 3])  # (4 was the latest until 5, a moment ago: A keeps 4, and 1-3 for its chain)
    real = vacuum_module._referenced

    def outrun(r, retained, keep):
        assert keep == [1, 2, 3, 4, 5]
        os.unlink(log.version_path(r, 1))  # (vacuum B, oldest first)
        for cache in (snapshot_module._COMMITTED, snapshot_module._RUNS, snapshot_module._CHAINS):
            cache.clear()  # (as in another process: nothing of the chain served from memory)
        return real(r, retained, keep)

    monkeypatch.setattr(vacuum_module, "_referenced", outrun)
    rcfmt.dataset.vacuum(root, retention_seconds=3600)
    monkeypatch.setattr(vacuum_module, "_referenced", real)
    assert sorted(rcfmt.dataset(root).read()["id"].to_pylist()) == list(range(40))
    rcfmt.dataset.vacuum(root, retention_seconds=0, enforce_retention_duration=False)
    assert log.list_versions(root) == [5]
    assert sorted(rcfmt.dataset(root).read()["id"].to_pylist()) == list(range(40))


def test_a_corrupt_chain_that_no_vacuum_explains_still_fails(tmp_path):
    """A retained changes version whose checkpoint is present but unreadable is not
    taken as vacuumed meanwhile: vacuum fails and deletes nothing."""
    root = str(tmp_path / "d")
    for k in range(3):
        _append(root, k)
    with open(log.version_path(root, 1), "r+b") as f:
        f.seek(40)
        f.write(b"\xff" * 64)
    before = sorted(os.listdir(os.path.join(root, "_rcfmt")))
    with pytest.raises(rcfmt.CorruptFileError):
        rcfmt.dataset.vacuum(root, retention_seconds=3600)
    assert sorted(os.listdir(os.path.join(root, "_rcfmt"))) == before


def test_a_retention_shorter_than_an_hour_is_refused_unless_no_write_can_be_running(tmp_path):
    """A write publishes its files before it commits the version naming them: vacuum with
    a retention of 0 beside it deleted them, and the version it committed could not be
    read. Such a retention needs enforce_retention_duration=False (a dry run needs
    nothing); the command says it with --no-enforce-retention-duration."""
    import subprocess
    import sys

    root = str(tmp_path / "d")
    _append(root, 0)
    rcfmt.write_dataset(pa.table({"id": pa.array([1], pa.int64())}), root, mode="overwrite")
    before = sorted(os.listdir(root))
    for call in (lambda: rcfmt.dataset.vacuum(root, 0), lambda: rcfmt.dataset(root).vacuum(retention_seconds=60),
                 lambda: rcfmt.dataset.vacuum(root, 3599.5)):
        with pytest.raises(rcfmt.InvalidOptionError, match="enforce_retention_duration=False"):
            call()
    assert sorted(os.listdir(root)) == before and log.list_versions(root) == [1, 2]
    would = rcfmt.dataset.vacuum(root, 0, dry_run=True)
    assert len(would) == 2 and sorted(os.listdir(root)) == before  # (version 1 and its file)
    with pytest.raises(rcfmt.InvalidOptionError, match="must be True or False"):
        rcfmt.dataset.vacuum(root, 0, enforce_retention_duration="no")
    command = [sys.executable, "-m", "rcfmt.cli", "vacuum", root, "--retention-hours", "0"]
    refused = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "--no-enforce-retention-duration" in refused.stderr
    done = subprocess.run(command + ["--no-enforce-retention-duration"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert log.list_versions(root) == [2] and rcfmt.dataset(root).read()["id"].to_pylist() == [1]


def test_a_missing_checkpoint_of_the_latest_chain_is_damage_not_a_vacuum(tmp_path, monkeypatch):
    """The checkpoint the latest version is read from goes missing while vacuum runs (no
    vacuum removes it: every one keeps it): vacuum fails and deletes no data file -- were
    it taken as vacuumed meanwhile, nothing would reference the table's files."""
    root = str(tmp_path / "d")
    for k in range(4):  # 1 a checkpoint, 2-4 its chain (4 the latest)
        _append(root, k)
    _age(root, [1, 2])
    real = vacuum_module._referenced

    def damaged(r, retained, keep):
        os.rename(log.version_path(r, 1), str(tmp_path / "moved"))
        for cache in (snapshot_module._COMMITTED, snapshot_module._RUNS, snapshot_module._CHAINS):
            cache.clear()
        return real(r, retained, keep)

    data = sorted(p for p in os.listdir(root) if p.endswith(".rcfmt"))
    monkeypatch.setattr(vacuum_module, "_referenced", damaged)
    with pytest.raises(rcfmt.CorruptFileError):  # (before: every data file deleted)
        rcfmt.dataset.vacuum(root, retention_seconds=3600)
    assert sorted(p for p in os.listdir(root) if p.endswith(".rcfmt")) == data


def test_time_travel_to_a_version_whose_checkpoint_a_vacuum_just_removed_is_no_such_version(tmp_path, monkeypatch):
    """A vacuum removing the oldest versions has deleted checkpoint 1, not yet changes
    version 3, when a reader asks for version 3: "no version 3" (it was a
    CorruptFileError on a healthy dataset). A checkpoint missing between versions that
    are present is still damage."""
    root = str(tmp_path / "d")
    for k in range(4):  # 1 a checkpoint, 2-4 its chain
        _append(root, k)
    rcfmt.dataset(root).checkpoint()  # 5
    real = dataset_module._version_size

    def vacuum_begins(r, version):
        size = real(r, version)
        os.unlink(log.version_path(r, 1))  # (another process's vacuum, oldest first)
        for cache in (snapshot_module._COMMITTED, snapshot_module._RUNS, snapshot_module._CHAINS):
            cache.clear()
        return size

    monkeypatch.setattr(dataset_module, "_version_size", vacuum_begins)
    with pytest.raises(rcfmt.InvalidOptionError, match=r"no version 3 any more .*versions: \[2, 3, 4, 5\]"):
        rcfmt.dataset(root, version=3)
    monkeypatch.setattr(dataset_module, "_version_size", real)
    assert sorted(rcfmt.dataset(root, version=5).read()["id"].to_pylist()) == list(range(40))


def test_a_checkpoint_missing_between_versions_present_is_still_corrupt(tmp_path):
    root = str(tmp_path / "d")
    for k in range(3):
        _append(root, k)
    rcfmt.dataset(root).checkpoint()  # 4
    for k in range(3, 5):
        _append(root, k)  # 5, 6: changes from checkpoint 4
    for cache in (snapshot_module._COMMITTED, snapshot_module._RUNS, snapshot_module._CHAINS):
        cache.clear()
    os.unlink(log.version_path(root, 4))
    with pytest.raises(rcfmt.CorruptFileError):
        rcfmt.dataset(root, version=6)
