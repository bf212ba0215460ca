"""A Spark write's abort after a commit whose answer was lost: Spark runs commit() and
abort() in separate Python workers, so abort() cannot know the commit's outcome; it keeps
the files the dataset's latest version names (which a landed commit made it name)."""
from __future__ import annotations

import os
import pickle

import pyarrow as pa
from pyspark.sql.types import LongType, StructField, StructType

import rcfmt
from spark_datasource.writer import RcfmtWriter, _named_by_latest


class _Entry:
    def __init__(self, path):
        self.path = path


class _Message:
    def __init__(self, files):
        self.files = files


def test_abort_keeps_the_files_the_latest_version_names(tmp_path):
    root = str(tmp_path / "ds")
    ds = rcfmt.write_dataset(pa.table({"x": [1, 2]}), root)
    named = ds.snapshot.paths[0]  # (relative, as the index and the commit messages name files)
    assert _named_by_latest(root, [named, "part-gone-00000.rcfmt"]) == {named}
    assert _named_by_latest(str(tmp_path / "nowhere"), ["a.rcfmt"]) == {"a.rcfmt"}  # (unreadable: keep)
    writer = pickle.loads(pickle.dumps(RcfmtWriter({"path": root}, StructType([StructField("x", LongType())]), False)))
    writer.remote = True  # (as on object storage, where tasks write to the final keys)
    deleted = []
    writer.plan.discard = lambda staging, paths=(): deleted.extend(paths)
    writer.abort([_Message([(_Entry(named), os.path.join(root, named)),
                            (_Entry("part-gone-00000.rcfmt"), os.path.join(root, "part-gone-00000.rcfmt"))])])
    assert deleted == [os.path.join(root, "part-gone-00000.rcfmt")]
    assert rcfmt.dataset(root).read()["x"].to_pylist() == [1, 2]


class _TaskContext:
    """What ``pyspark.TaskContext.get()`` answers in a task: partition 0, attempt 0, and
    a task attempt id unique in the application."""

    def __init__(self, task_attempt_id):
        self._id = task_attempt_id

    def partitionId(self):
        return 0

    def attemptNumber(self):
        return 0

    def taskAttemptId(self):
        return self._id


def test_attempts_of_two_stage_attempts_write_under_other_names(tmp_path, monkeypatch):
    """A retried stage numbers its task attempts from 0 again: names built from the
    attempt number let a zombie of the first stage attempt write (and, aborting, delete)
    the live attempt's files. The task attempt's id, unique in the application, names
    them instead."""
    import pyspark

    root = str(tmp_path / "ds")
    rcfmt.write_dataset(pa.table({"x": pa.array([0], pa.int64())}), root)
    writer = pickle.loads(pickle.dumps(RcfmtWriter({"path": root}, StructType([StructField("x", LongType())]), False)))
    batch = pa.record_batch({"x": pa.array([1, 2], pa.int64())})
    staged = []
    for task_attempt_id in (7, 12):
        monkeypatch.setattr(pyspark.TaskContext, "get", classmethod(lambda cls, i=task_attempt_id: _TaskContext(i)))
        staged.append([p for _, p in writer.write(iter([batch])).files])
    assert len(set(staged[0]) | set(staged[1])) == 2 and all(os.path.exists(p) for p in staged[0] + staged[1])


def test_stream_batch_commit_on_a_new_writer_removes_the_tasks_staging(tmp_path, monkeypatch):
    """Spark's streaming commit runner calls ``streamWriter()`` again for each micro-batch's
    commit/abort: that writer has another job id and staging directory than the one the
    tasks wrote under. The commit must still remove the tasks' staging directory (the
    files of failed attempts included), and so must an abort."""
    import pyspark

    from rcfmt.dataset import log
    from spark_datasource.streaming import RcfmtStreamWriter

    root = str(tmp_path / "ds")
    rcfmt.write_dataset(pa.table({"x": pa.array([0], pa.int64())}), root)
    schema = StructType([StructField("x", LongType())])
    options = {"path": root, "txnAppId": "app"}
    batch = pa.record_batch({"x": pa.array([1, 2], pa.int64())})

    def run_tasks():
        tasks = pickle.loads(pickle.dumps(RcfmtStreamWriter(options, schema, False)))  # (the tasks' writer)
        messages = []
        for task_attempt_id in (3, 4):  # attempt 3 fails after writing its file (its message is lost)
            monkeypatch.setattr(pyspark.TaskContext, "get", classmethod(lambda cls, i=task_attempt_id: _TaskContext(i)))
            messages.append(tasks.write(iter([batch])))
        return [None, messages[1]]

    messages = run_tasks()
    RcfmtStreamWriter(options, schema, False).commit(messages, 0)  # (a new writer, as Spark's commit runner)
    assert rcfmt.dataset(root).read()["x"].to_pylist() == [0, 1, 2]
    staging_area = log.staging_root(root)
    assert not os.path.isdir(staging_area) or os.listdir(staging_area) == []

    messages = run_tasks()
    RcfmtStreamWriter(options, schema, False).abort(messages, 1)
    assert not os.path.isdir(staging_area) or os.listdir(staging_area) == []
    assert rcfmt.dataset(root).read()["x"].to_pylist() == [0, 1, 2]
