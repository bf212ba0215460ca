"""The streaming source's offset walk, driven as Spark drives it (``initialOffset``,
``latestOffset`` with a read limit, ``partitions``, ``read`` on the planned partitions)
but without a JVM, against brute force: random histories of appends, deletes, updates,
optimize, evolve and checkpoints committed while the stream runs, with restarts (a new
reader continuing from the last offset, as after a query restart) and replays (a batch
planned again from the same offsets). Every appended row is delivered exactly once, in
version order; batches respect ``maxFilesPerTrigger`` / ``maxRowsPerTrigger`` (at least
one file); versions that delete or rewrite rows fail the stream unless skipped."""
from __future__ import annotations

import json
import shutil
import tempfile

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("pyspark")
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles, ReadMaxRows  # noqa: E402

import rcfmt  # noqa: E402
from rcfmt import col  # noqa: E402
from rcfmt.errors import InvalidOptionError, UnsupportedError  # noqa: E402
from spark_datasource.streaming import RcfmtStreamReader  # noqa: E402
from spark_datasource.types import to_spark_schema  # noqa: E402


class Stream:
    """A query of the rcfmt source as Spark runs it: offsets kept as JSON (Spark's
    offset log), a new reader after each restart."""

    def __init__(self, root: str, **options):
        self.root, self.options = root, {"path": root, **{k: str(v) for k, v in options.items()}}
        self.reader = self._reader()
        self.offset = json.loads(json.dumps(self.reader.initialOffset()))
        self.batches: list = []  # per micro-batch: (ids, files read)

    def _reader(self):
        schema = to_spark_schema(rcfmt.dataset(self.root).schema)
        return RcfmtStreamReader(self.options, schema)

    def restart(self) -> None:
        self.reader = self._reader()

    def step(self, limit) -> bool:
        """One micro-batch; False when there was nothing new."""
        end = self.reader.latestOffset(self.offset, limit)
        if end == self.offset:
            return False
        ids, files = self._read(end)
        assert self._read(end) == (ids, files)  # a replay plans and reads the same rows
        self.batches.append((ids, files))
        self.offset = json.loads(json.dumps(end))
        return True

    def _read(self, end) -> tuple:
        parts = self.reader.partitions(self.offset, end)
        ids, files = [], 0
        for p in parts:
            files += len(p.fragments)
            for batch in self.reader.read(p):
                ids += batch.column("id").to_pylist()
        return ids, files


OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 40), st.integers(5, 30)),  # rows, rows per file
    st.tuples(st.just("delete"), st.integers(0, 6)),
    st.tuples(st.just("update"), st.integers(0, 6)),
    st.tuples(st.just("optimize")), st.tuples(st.just("evolve")), st.tuples(st.just("checkpoint")),
    st.tuples(st.just("stream"), st.integers(0, 3)),  # micro-batches
    st.tuples(st.just("restart")),
), min_size=1, max_size=14)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(ops=OPS, first=st.integers(0, 30), limit=st.sampled_from(["all", "files", "rows"]),
       bound=st.integers(1, 4), start=st.sampled_from(["snapshot", "1", "latest"]), skip=st.booleans())
def test_the_stream_delivers_every_appended_row_once_in_version_order(ops, first, limit, bound, start, skip):
    root = tempfile.mkdtemp(prefix="rcfmt-stream-")
    try:
        _check(root, ops, first, limit, bound, start, skip)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _check(root, ops, first, limit, bound, start, skip):
    next_id = 0

    def append(n: int, per_file: int, mode: str = "append") -> list:
        nonlocal next_id
        ids = np.arange(next_id, next_id + n, dtype=np.int64)
        next_id += n
        rcfmt.write_dataset(pa.table({"id": ids, "x": ids * 0.5}), root, mode=mode, target_file_rows=per_file)
        return ids.tolist()

    appended = {1: append(first, 10) if first else append(1, 10)}  # version -> ids it appended
    options = {"skipChangeCommits": skip}
    if start != "snapshot":
        options["startingVersion"] = start
    stream = Stream(root, **options)
    read_limit = {"all": ReadAllAvailable(), "files": ReadMaxFiles(bound), "rows": ReadMaxRows(bound * 10)}[limit]
    changes = []  # versions that deleted or rewrote rows
    failed = None
    for op in ops:
        kind = op[0]
        ds = rcfmt.dataset(root)
        if kind == "append":
            appended[ds.version + 1] = append(op[1], op[2])
        elif kind in ("delete", "update") and ds.num_rows:
            pick = col("id").isin(list(range(op[1], next_id, 7)))
            before = ds.version
            ds = ds.delete(pick) if kind == "delete" else ds.update(pick, {"x": -1.0})
            if ds.version != before:
                changes.append(ds.version)
        elif kind == "optimize":
            ds.optimize()
        elif kind == "evolve":
            ds.evolve(add=[(f"c{ds.version}", pa.int32())])
        elif kind == "checkpoint":
            ds.checkpoint()
        elif kind == "restart":
            stream.restart()
        elif kind == "stream" and failed is None:
            try:
                for _ in range(op[1]):
                    stream.step(read_limit)
            except UnsupportedError as exc:
                failed = exc
    if failed is None:
        try:
            while stream.step(read_limit):
                pass
        except UnsupportedError as exc:
            failed = exc
    latest = rcfmt.dataset(root).version
    first_version = {"snapshot": None, "1": 1, "latest": None}[start]
    # what the stream must deliver: the starting snapshot's rows, then what later versions append
    if start == "snapshot":  # (the stream was made right after version 1)
        expected = [appended[1]]
        after = 2
    elif start == "latest":
        expected, after = [], 2
    else:
        expected, after = [], first_version
    blocking = [v for v in changes if v >= after]
    stop = latest + 1 if skip or not blocking else blocking[0]
    expected += [appended[v] for v in sorted(appended) if after <= v < stop]
    delivered = [i for ids, _ in stream.batches for i in ids]
    assert sorted(delivered) == sorted(i for ids in expected for i in ids)  # each once
    flat = [i for ids, _ in stream.batches for i in sorted(ids)]
    assert flat == sorted(flat)  # in version order (ids grow with versions)
    if blocking and not skip:
        assert failed is not None and f"version {blocking[0]} " in str(failed)
    else:
        assert failed is None
    for ids, files in stream.batches:
        assert files >= 1
        if limit == "files":
            assert files <= bound
        elif limit == "rows" and files > 1:
            assert len(ids) <= bound * 10


def test_offsets_and_options_are_checked(tmp_path):
    root = str(tmp_path / "ds")
    rcfmt.write_dataset(pa.table({"id": [1, 2]}), root)
    stream = Stream(root)
    with pytest.raises(InvalidOptionError, match="not an rcfmt stream offset"):
        stream.reader.latestOffset({"files": 3}, ReadAllAvailable())
    for options, message in (({"startingVersion": "0"}, ">= 1"), ({"maxRowsPerTrigger": "x"}, "integer"),
                             ({"skipChangeCommits": "maybe"}, "true or false")):
        with pytest.raises(InvalidOptionError, match=message):
            Stream(root, **options)
    plain = tmp_path / "plain"
    plain.mkdir()
    rcfmt.write_table(pa.table({"id": [1]}), str(plain / "a.rcfmt"))
    with pytest.raises(UnsupportedError, match="needs a dataset with versions"):
        RcfmtStreamReader({"path": str(plain)}, to_spark_schema(pa.schema([("id", pa.int64())])))


def test_a_stream_behind_vacuum_fails_clearly(tmp_path):
    """Versions a stream has not read yet, removed by vacuum: the stream fails naming
    the version, instead of skipping rows."""
    root = str(tmp_path / "ds")
    for k in range(4):
        rcfmt.write_dataset(pa.table({"id": [k]}), root, mode="append")
    stream = Stream(root, startingVersion=2)
    rcfmt.dataset(root).checkpoint()
    rcfmt.dataset(root).vacuum(retention_seconds=0, enforce_retention_duration=False)
    with pytest.raises(rcfmt.RcfmtError, match="version [12] of .* is no longer there"):
        stream.step(ReadAllAvailable())


@pytest.mark.parametrize("start", ["snapshot", "latest"])
@pytest.mark.parametrize("limit", [ReadAllAvailable(), ReadMaxFiles(1)])
def test_a_replayed_first_batch_reads_the_rows_it_was_planned_with(tmp_path, start, limit):
    """The first batch fails after Spark logged its end offset (offsets/0, no commits/0);
    versions are appended meanwhile; on restart Spark replays it from initialOffset()
    computed again (the dataset's latest version has moved): the batch still reads the
    rows it was planned with, and the next batches the rest, each row once."""
    root = str(tmp_path / "ds")
    rcfmt.write_dataset(pa.table({"id": list(range(30))}), root, target_file_rows=10)
    options = {} if start == "snapshot" else {"startingVersion": "latest"}
    stream = Stream(root, **options)
    if start == "latest":
        rcfmt.write_dataset(pa.table({"id": list(range(30, 40))}), root, target_file_rows=10)
    end = json.loads(json.dumps(stream.reader.latestOffset(stream.offset, limit)))
    planned = stream._read(end)[0]
    rcfmt.write_dataset(pa.table({"id": list(range(100, 110))}), root)  # while the query is down
    stream.restart()
    stream.offset = json.loads(json.dumps(stream.reader.initialOffset()))  # Spark's start of the replay
    replayed = stream._read(end)[0]
    assert replayed == planned and planned
    stream.offset = end
    while stream.step(limit):
        pass
    delivered = replayed + [i for ids, _ in stream.batches for i in ids]
    want = list(range(30)) if start == "snapshot" else list(range(30, 40))
    assert sorted(delivered) == want + list(range(100, 110))


def test_an_append_widening_a_streamed_column_fails_the_stream_clearly(tmp_path):
    """An append that widens a column the stream reads (int32 -> int64) fails it naming
    the version and the column (a CorruptFileError at read time said a file was damaged);
    a stream started after it reads the narrower versions before it, widened."""
    root = str(tmp_path / "ds")
    rcfmt.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64()), "a": pa.array([1, 2], pa.int32())}), root)
    stream = Stream(root, startingVersion=1)
    assert stream.step(ReadAllAvailable())
    rcfmt.write_dataset(pa.table({"id": pa.array([3], pa.int64()), "a": pa.array([2**40], pa.int64())}), root)
    with pytest.raises(UnsupportedError, match=r"version 2 .* column 'a'.* from int32 to int64"):
        stream.step(ReadAllAvailable())
    fresh = Stream(root, startingVersion=1)
    while fresh.step(ReadAllAvailable()):
        pass
    assert sorted(i for ids, _ in fresh.batches for i in ids) == [1, 2, 3]


def test_a_stream_behind_vacuum_whose_version_index_was_kept_fails_naming_it(tmp_path):
    """Vacuum keeps the index of a version past its retention when a later version is
    read from its chain, not its data files: a stream behind it fails naming the
    version (it failed with 'data file missing', as if the dataset were damaged)."""
    root = str(tmp_path / "ds")
    rcfmt.write_dataset(pa.table({"id": list(range(10))}), root)
    stream = Stream(root, skipChangeCommits="true")
    assert stream.step(ReadAllAvailable())
    rcfmt.write_dataset(pa.table({"id": list(range(10, 20))}), root)
    rcfmt.dataset(root).delete(col("id") >= 10)
    rcfmt.write_dataset(pa.table({"id": list(range(20, 30))}), root)
    rcfmt.dataset(root).vacuum(retention_seconds=0, enforce_retention_duration=False)
    stream.restart()
    with pytest.raises(UnsupportedError, match="version 2 of .* is no longer readable: .* vacuum"):
        stream.step(ReadAllAvailable())
