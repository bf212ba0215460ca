"""Exactly-once commits of streaming micro-batches (``commit(..., stream=(app, batch))``)
and what each version changed (``version_changes``), without Spark: a replayed batch
commits nothing and leaves no file, whichever commits came between; concurrent writers
of one batch make one version; every later version carries the last batch of each
application, through appends, overwrites, deletes, optimize, evolve and checkpoints."""
from __future__ import annotations

import os
import threading
import uuid

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
from rcfmt import col
from rcfmt.dataset import FileSetWriter, begin_write, commit, commits
from rcfmt.dataset.version_changes import version_changes
from rcfmt.errors import RcfmtError


def _rows(first: int, n: int = 5) -> pa.Table:
    ids = np.arange(first, first + n, dtype=np.int64)
    return pa.table({"id": ids, "x": ids * 0.5})


def _stream_commit(root: str, table: pa.Table, app: str, batch: int, mode: str = "append"):
    """Write ``table`` as a micro-batch would (files staged, then committed) and commit
    it as batch ``batch`` of ``app``; the new version or None."""
    plan = begin_write(root, table.schema, mode=mode)
    job = uuid.uuid4().hex
    staging = plan.staging_dir(f"test-{job}")
    writer = FileSetWriter(staging, plan.schema, plan.partitioning, prefix=job[:12])
    writer.write(table)
    files = writer.close()
    try:
        return commit(root, [e for e, _ in files], mode=mode, read_version=plan.read_version,
                      data_schema=plan.data_schema, partitioning=plan.partitioning, txn_id=f"test-{job}",
                      staged=[(p, e.path) for e, p in files], base_table_unindexed=plan.adopt, stream=(app, batch))
    finally:
        plan.discard(staging)


def _data_files(root: str) -> set:
    out = set()
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x != "_rcfmt"]
        out |= {os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith(".rcfmt")}
    return out


def _ids(root: str) -> list:
    return sorted(rcfmt.dataset(root).read(columns=["id"]).column("id").to_pylist())


def test_a_replayed_batch_commits_nothing_and_leaves_no_file(tmp_path):
    root = str(tmp_path / "ds")
    assert _stream_commit(root, _rows(0), "q1", 0) == 1
    assert _stream_commit(root, _rows(5), "q1", 1) == 2
    rcfmt.write_dataset(_rows(100), root, mode="append")  # another writer
    assert _stream_commit(root, _rows(10), "q2", 0) == 4  # another query: its own batch numbers
    files = _data_files(root)
    for batch in (0, 1):  # replays (a crash after the commit, before Spark's checkpoint)
        assert _stream_commit(root, _rows(5 + 5 * batch), "q1", batch) is None
    assert _data_files(root) == files  # the replay's files were removed again
    assert rcfmt.dataset(root).version == 4
    assert _ids(root) == list(range(15)) + list(range(100, 105))
    assert _stream_commit(root, _rows(20), "q1", 2) == 5
    ds = rcfmt.dataset(root)
    assert commits.stream_batches(ds.info) == {"q1": 2, "q2": 0}
    assert ds.info["stream"] == {"application": "q1", "batch": 2}
    assert "stream" not in rcfmt.dataset(root, version=3).info  # a plain append records no batch of its own
    assert commits.stream_batches(rcfmt.dataset(root, version=3).info) == {"q1": 1}


def test_the_last_batches_survive_every_kind_of_commit(tmp_path):
    root = str(tmp_path / "ds")
    _stream_commit(root, _rows(0, 50), "q", 0)
    ds = rcfmt.dataset(root)
    ds = ds.delete(col("id") < 3)
    ds = ds.update(col("id") == 10, {"x": 1.0})
    ds = ds.optimize()
    ds = ds.evolve(add=[("y", pa.int32())])
    ds = ds.checkpoint()
    assert commits.stream_batches(ds.info) == {"q": 0}
    assert _stream_commit(root, pa.table({"id": [1000], "x": [1.0], "y": pa.array([1], pa.int32())}), "q", 0) is None
    rcfmt.write_dataset(_rows(200), root, mode="overwrite")
    assert commits.stream_batches(rcfmt.dataset(root).info) == {"q": 0}
    assert _stream_commit(root, _rows(0), "q", 0) is None
    assert _stream_commit(root, _rows(0), "q", 1, mode="overwrite") is not None  # complete mode
    assert _ids(root) == list(range(5))


def test_concurrent_writers_of_one_batch_make_one_version(tmp_path):
    root = str(tmp_path / "ds")
    _stream_commit(root, _rows(0), "q", 0)
    results, errors = [], []

    def run(k):
        try:
            results.append(_stream_commit(root, _rows(1000 + 10 * k), "q", 1 if k < 4 else 0))
        except BaseException as exc:  # (re-raised below)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(r for r in results if r is not None) == [2]  # batch 1 once; batch 0 was committed before
    assert len(rcfmt.dataset(root).read()) == 10
    assert commits.stream_batches(rcfmt.dataset(root).info) == {"q": 1}


def test_only_the_most_recent_applications_are_carried(tmp_path, monkeypatch):
    monkeypatch.setattr(commits, "STREAM_APPLICATIONS_KEPT", 3)
    root = str(tmp_path / "ds")
    for k in range(5):
        _stream_commit(root, _rows(10 * k), f"q{k}", 7)
    assert commits.stream_batches(rcfmt.dataset(root).info) == {"q2": 7, "q3": 7, "q4": 7}
    assert _stream_commit(root, _rows(100), "q4", 7) is None


def test_version_changes_tell_appends_from_row_changes(tmp_path):
    root = str(tmp_path / "ds")
    rcfmt.write_dataset(_rows(0, 20), root, target_file_rows=10)
    rcfmt.write_dataset(_rows(20, 20), root, mode="append", target_file_rows=10)
    ds = rcfmt.dataset(root).delete(col("id") == 3)
    ds = ds.optimize()
    rcfmt.write_dataset(_rows(40, 5), root, mode="overwrite")
    first, second, delete, optimize, overwrite = (version_changes(root, v) for v in range(1, 6))
    assert (len(first.added), first.added_rows, first.changes_rows) == (2, (10, 10), False)
    assert (len(second.added), second.removed, second.vectors_changed, second.changes_rows) == (2, (), (), False)
    assert set(second.added).isdisjoint(first.added)
    assert (delete.added, delete.removed, len(delete.vectors_changed), delete.changes_rows) == ((), (), 1, True)
    assert optimize.operation == "optimize" and optimize.removed and not optimize.changes_rows
    assert overwrite.changes_rows and overwrite.added_rows == (5,)
    with pytest.raises(RcfmtError, match="no longer there"):
        version_changes(root, 9)


def _forge_stream_record(root: str, value) -> None:
    """Rewrite the latest index version with its ``stream_batches`` info replaced by ``value``."""
    import json

    from rcfmt.dataset.index import INDEX_METADATA_KEY
    from rcfmt.dataset.log import latest_version, version_path

    path = version_path(root, latest_version(root))
    with rcfmt.open(path) as f:
        table, metadata = f.read(), dict(f.metadata)
    info = json.loads(metadata[INDEX_METADATA_KEY])
    info["stream_batches"] = value
    metadata[INDEX_METADATA_KEY] = json.dumps(info)
    os.remove(path)
    rcfmt.write_table(table, path, metadata=metadata)


@pytest.mark.parametrize("forged", [
    ["q1", 0], {"q1": 3}, {"q1": [None, 1.0]}, {"q1": ["0", 1.0]}, {"q1": [0]}, {"q1": [-1, 1.0]},
    {"q1": [1.5, 1.0]}, {"q1": [True, 1.0]}, {"q1": [0, "now"]}, "q1",
], ids=repr)
def test_a_forged_stream_record_is_a_corrupt_index(tmp_path, forged):
    """A version whose ``stream_batches`` is not ``{application: [batch, time]}`` is refused
    as corrupt wherever it is read: by ``stream_batches`` and by the next micro-batch's
    commit (which then leaves no file behind)."""
    root = str(tmp_path / "ds")
    assert _stream_commit(root, _rows(0), "q1", 0) == 1
    _forge_stream_record(root, forged)
    with pytest.raises(rcfmt.CorruptFileError, match="stream_batches"):
        commits.stream_batches(rcfmt.dataset(root).info)
    files = _data_files(root)
    with pytest.raises(rcfmt.CorruptFileError, match="stream_batches"):
        _stream_commit(root, _rows(5), "q1", 1)
    assert _data_files(root) == files and rcfmt.dataset(root).version == 1
    _forge_stream_record(root, {"q1": [0, 1.5]})  # the well-formed record still reads
    assert commits.stream_batches(rcfmt.dataset(root).info) == {"q1": 0}
    assert _stream_commit(root, _rows(5), "q1", 1) == 2
