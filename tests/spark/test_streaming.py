"""Structured Streaming with rcfmt (real Spark, local[2]): the exactly-once sink
(replayed batches, a driver killed mid-run and restarted, bad input) and the source
(follows appends of another writer in version order, optimize delivers nothing twice,
change commits fail or are skipped, admission control, ``Trigger.AvailableNow``, the
``filter`` and ``columns`` options, starting versions). The offset walk itself is tested
without Spark against brute force (tests/spark/test_stream_offsets.py)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
from rcfmt import col
from rcfmt.dataset import commits

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _json_input(directory, files: int, rows: int) -> list:
    """``files`` JSON-lines files of ``rows`` rows (``id`` unique, ``g`` a group); the ids."""
    os.makedirs(directory, exist_ok=True)
    ids = []
    for k in range(files):
        with open(os.path.join(directory, f"part-{k:04d}.json"), "w") as f:
            for i in range(k * rows, (k + 1) * rows):
                f.write(json.dumps({"id": i, "g": f"g{i % 7}"}) + "\n")
                ids.append(i)
    return ids


def _ids(path) -> list:
    return sorted(rcfmt.dataset(str(path)).read(columns=["id"]).column("id").to_pylist())


def _sink_query(spark, source, target, checkpoint, **options):
    stream = (spark.readStream.format("json").schema("id long, g string").option("maxFilesPerTrigger", 1)
              .load(str(source)))
    writer = stream.writeStream.format("rcfmt").option("checkpointLocation", str(checkpoint)).options(**options)
    return writer.trigger(availableNow=True).start(str(target))


def _error(query, timeout: float = 120) -> str:
    """The message of the exception the query failed with (it must fail)."""
    try:
        query.awaitTermination(timeout)
    except Exception as exc:  # (awaitTermination raises the query's failure)
        return str(exc)
    assert query.exception() is not None, "the query did not fail"
    return str(query.exception())


def _run(query, timeout: float = 240):
    assert query.awaitTermination(timeout), "the query did not finish"
    if query.exception() is not None:
        raise AssertionError(str(query.exception()))


# ------------------------------------------------------------------ sink
def test_sink_writes_each_batch_once_and_recognises_replayed_batches(spark, tmp_path):
    """Each micro-batch is one version recording the query and batch; batches Spark runs
    again (their commits dropped from the checkpoint, as after a crash between the rcfmt
    commit and Spark's) commit nothing, leave no file, and the query goes on."""
    ids = _json_input(tmp_path / "in", 5, 40)
    target, ck = tmp_path / "out", tmp_path / "ck"
    _run(_sink_query(spark, tmp_path / "in", target, ck, partitionBy="g"))
    ds = rcfmt.dataset(str(target))
    assert _ids(target) == ids and ds.version == 5 and ds.partition_by == ["g"]
    with open(ck / "metadata") as f:
        query = json.load(f)["id"]
    assert commits.stream_batches(ds.info) == {query: 4}
    assert [rcfmt.dataset(str(target), version=v).info["stream"]["batch"] for v in range(1, 6)] == list(range(5))
    files = sorted(p for p in _walk(target) if "_rcfmt" not in p)
    for batch in (3, 4):  # Spark did not record these batches as committed: it runs them again
        for name in (str(batch), f".{batch}.crc"):
            if os.path.exists(ck / "commits" / name):
                os.remove(ck / "commits" / name)
    _json_input(tmp_path / "more", 1, 40)
    shutil.copy(tmp_path / "more" / "part-0000.json", tmp_path / "in" / "part-0005.json")
    _run(_sink_query(spark, tmp_path / "in", target, ck, partitionBy="g"))
    ds = rcfmt.dataset(str(target))
    assert _ids(target) == sorted(ids + list(range(40)))  # batches 3 and 4 once, and the new file's batch (ids 0-39 again)
    assert ds.version == 6 and commits.stream_batches(ds.info) == {query: 5}
    new = sorted(p for p in _walk(target) if "_rcfmt" not in p)
    assert set(files) <= set(new) and len(new) - len(files) == len(rcfmt.dataset(str(target)).files) - len(
        rcfmt.dataset(str(target), version=5).files)  # the replays left no file behind


def _walk(root) -> list:
    return [os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root) for n in names]


def test_sink_complete_mode_overwrites_and_bad_input_fails_before_writing(spark, tmp_path):
    from pyspark.sql import functions as F

    _json_input(tmp_path / "in", 3, 30)
    target = tmp_path / "agg"
    counts = (spark.readStream.format("json").schema("id long, g string").load(str(tmp_path / "in"))
              .groupBy("g").agg(F.count("*").alias("n")))
    q = (counts.writeStream.format("rcfmt").outputMode("complete").option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start(str(target)))
    _run(q)
    got = rcfmt.dataset(str(target)).read().sort_by("g")
    assert got.column("n").to_pylist() == [len([i for i in range(90) if i % 7 == k]) for k in range(7)]
    # a new batch whose column has another type than the dataset's: the query fails, nothing is committed
    rcfmt.write_dataset(pa.table({"id": pa.array(["a"]), "g": ["x"]}), str(tmp_path / "strings"))
    q = _sink_query(spark, tmp_path / "in", tmp_path / "strings", tmp_path / "ck2")
    assert "SchemaError: cannot append: column 'id'" in _error(q)
    assert rcfmt.dataset(str(tmp_path / "strings")).version == 1
    q = _sink_query(spark, tmp_path / "in", tmp_path / "bad", tmp_path / "ck3", replaceWhere="id > 0")
    assert "replaceWhere applies to batch writes" in _error(q)
    assert not os.path.exists(tmp_path / "bad" / "_rcfmt" / "v00000000000000000001.rcfmt")
    # a path that is a file, not a dataset directory: the query fails, the file stays as it was
    (tmp_path / "notes.txt").write_text("not a dataset")
    q = _sink_query(spark, tmp_path / "in", tmp_path / "notes.txt", tmp_path / "ck4")
    assert "notes.txt" in _error(q)
    assert (tmp_path / "notes.txt").read_text() == "not a dataset"
    # no checkpoint location: Spark refuses the query at start()
    from pyspark.errors import PySparkException
    from pyspark.sql.utils import AnalysisException

    stream = spark.readStream.format("json").schema("id long, g string").load(str(tmp_path / "in"))
    with pytest.raises((AnalysisException, PySparkException), match="checkpointLocation must be specified"):
        stream.writeStream.format("rcfmt").start(str(tmp_path / "nock"))
    assert not os.path.exists(tmp_path / "nock" / "_rcfmt")


KILLED_DRIVER = r"""
import sys
from pyspark.sql import SparkSession
source, target, checkpoint = sys.argv[1:4]
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
stream = spark.readStream.format("json").schema("id long, g string").option("maxFilesPerTrigger", 1).load(source)
q = (stream.writeStream.format("rcfmt").option("checkpointLocation", checkpoint).trigger(availableNow=True)
     .start(target))
q.awaitTermination()
print("DONE", q.exception())
"""


def test_sink_killed_mid_run_and_restarted_holds_every_row_once(tmp_path):
    """A driver (its JVM and Python workers) killed abruptly while batches commit, then
    restarted from the checkpoint until the input is drained: every input row is in the
    dataset exactly once. (One kill: each driver costs a JVM start; fuzz/kill_anywhere.py
    kills the commits themselves at every point.)"""
    ids = _json_input(tmp_path / "in", 8, 25)
    target, ck = str(tmp_path / "out"), str(tmp_path / "ck")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])}
    args = [sys.executable, "-c", KILLED_DRIVER, str(tmp_path / "in"), target, ck]
    for kill_after in (3,):  # versions committed before the kill
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if (rcfmt.dataset(target).version or 0) >= kill_after:
                    break
            except (FileNotFoundError, rcfmt.RcfmtError):
                pass
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and its Python workers
        proc.wait()
        assert rcfmt.dataset(target).version >= kill_after
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert "DONE None" in proc.stdout, proc.stderr[-3000:]
    assert _ids(target) == ids


# ------------------------------------------------------------------ source
def _rows(first: int, n: int, version: int) -> pa.Table:
    ids = np.arange(first, first + n, dtype=np.int64)
    return pa.table({"id": ids, "x": ids * 0.5, "v": np.full(n, version, np.int64)})


def _collect(spark, path, checkpoint, *, trigger=None, **options):
    """Start a stream of ``path`` into foreachBatch; ``(query, [(batch id, ids), ...])``."""
    got = []

    def keep(frame, batch_id):
        got.append((batch_id, sorted(r.id for r in frame.select("id").collect())))

    reader = spark.readStream.format("rcfmt").options(**options).load(str(path))
    writer = reader.writeStream.option("checkpointLocation", str(checkpoint)).foreachBatch(keep)
    writer = writer.trigger(**(trigger or {"availableNow": True}))
    return writer.start(), got


def test_source_follows_another_writers_appends_in_version_order(spark, tmp_path):
    """While the query runs, another writer appends versions (and optimizes once): every
    row is delivered once, micro-batches in version order; the optimize delivers nothing."""
    path = str(tmp_path / "ds")
    rcfmt.write_dataset(_rows(0, 100, 1), path, target_file_rows=40)
    q, got = _collect(spark, path, tmp_path / "ck", trigger={"processingTime": "200 milliseconds"})
    try:
        deadline = time.monotonic() + 120
        while not got and time.monotonic() < deadline and q.exception() is None:
            time.sleep(0.05)  # the first micro-batch: version 1's snapshot
        first = 100
        for k in range(6):
            time.sleep(0.3)
            rcfmt.write_dataset(_rows(first, 50, k + 2), path, mode="append", target_file_rows=30)
            first += 50
            if k == 2:
                rcfmt.dataset(path).optimize()
        deadline = time.monotonic() + 120
        while sum(len(ids) for _, ids in got) < first and time.monotonic() < deadline and q.exception() is None:
            time.sleep(0.1)
        time.sleep(1.0)  # (anything delivered twice would arrive now)
    finally:
        q.stop()
    assert q.exception() is None
    delivered = [i for _, ids in got for i in ids]
    assert sorted(delivered) == list(range(first))  # every row, once
    batches = [ids for _, ids in got if ids]
    assert all(a[-1] < b[0] for a, b in zip(batches, batches[1:]))  # versions in order (ids grow with them)
    assert batches[0] == list(range(100)) and len(batches) >= 2


def test_source_change_commits_fail_the_query_or_are_skipped(spark, tmp_path):
    path = str(tmp_path / "ds")
    rcfmt.write_dataset(_rows(0, 20, 1), path)
    rcfmt.write_dataset(_rows(20, 20, 2), path, mode="append")
    rcfmt.dataset(path).delete(col("id") < 5)
    rcfmt.write_dataset(_rows(40, 20, 4), path, mode="append")
    q, got = _collect(spark, path, tmp_path / "ck1", startingVersion="1")
    error = _error(q)
    assert "deletes or rewrites rows" in error and "skipChangeCommits" in error
    assert sorted(i for _, ids in got for i in ids) == list(range(40))  # what came before the delete
    q, got = _collect(spark, path, tmp_path / "ck2", startingVersion="1", skipChangeCommits="true")
    _run(q)
    assert sorted(i for _, ids in got for i in ids) == list(range(60))  # delivered as appended
    # the default start: the latest snapshot (deletes applied), then new versions
    q, got = _collect(spark, path, tmp_path / "ck3")
    _run(q)
    assert sorted(i for _, ids in got for i in ids) == list(range(5, 60))
    q, got = _collect(spark, path, tmp_path / "ck4", startingVersion="latest")
    _run(q)
    assert [i for _, ids in got for i in ids] == []


def test_source_admission_control_filter_and_columns(spark, tmp_path):
    """``maxFilesPerTrigger`` and ``maxRowsPerTrigger`` bound the micro-batches of an
    ``availableNow`` query, which drains the dataset and stops; the ``filter`` and
    ``columns`` options apply to every micro-batch."""
    path = str(tmp_path / "ds")
    rcfmt.write_dataset(_rows(0, 60, 1), path, target_file_rows=20)  # 3 files
    for k in range(3):
        rcfmt.write_dataset(_rows(60 + 20 * k, 20, k + 2), path, mode="append")
    q, got = _collect(spark, path, tmp_path / "ck1", maxFilesPerTrigger="2")
    _run(q)
    assert [len(ids) for _, ids in got] == [40, 40, 40]
    q, got = _collect(spark, path, tmp_path / "ck2", maxRowsPerTrigger="50")
    _run(q)
    assert [len(ids) for _, ids in got] == [40, 40, 40]  # whole files, at most 50 rows
    q, got = _collect(spark, path, tmp_path / "ck3", maxRowsPerTrigger="5")
    _run(q)
    assert [len(ids) for _, ids in got] == [20] * 6  # at least one file per batch

    frames = []
    reader = (spark.readStream.format("rcfmt").option("filter", "x < 50 AND id NOT IN (7, 90)")
              .option("columns", "id").load(path))
    assert reader.columns == ["id"]
    q = (reader.writeStream.option("checkpointLocation", str(tmp_path / "ck4"))
         .foreachBatch(lambda frame, _: frames.append(frame.collect())).trigger(availableNow=True).start())
    _run(q)
    rows = [r for f in frames for r in f]
    assert sorted(r.id for r in rows) == [i for i in range(120) if i * 0.5 < 50 and i not in (7, 90)]
    assert all(r.asDict().keys() == {"id"} for r in rows)


def test_source_bad_input_fails_with_clear_errors(spark, tmp_path):
    from pyspark.errors import PySparkException
    from pyspark.sql.utils import AnalysisException

    with pytest.raises((AnalysisException, PySparkException), match="no dataset or rcfmt file"):
        spark.readStream.format("rcfmt").load(str(tmp_path / "missing"))
    path = str(tmp_path / "ds")
    rcfmt.write_dataset(_rows(0, 5, 1), path)
    for options, message in (({"startingVersion": "soon"}, "startingVersion"),
                             ({"version": "1"}, "startingVersion"), ({"maxFilesPerTrigger": "0"}, ">= 1")):
        q, _ = _collect(spark, path, tmp_path / f"ck-{len(message)}-{list(options)[0]}", **options)
        assert message in _error(q)
