"""The streaming source's reader driven as Spark drives it (initialOffset, latestOffset,
partitions, read), without a JVM: versions that change no rows after their parent was
vacuumed, a filter on a column an evolve added, and a schema that changed between
``load()`` and the query's start. tests/spark/test_streaming.py runs real queries."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

import rcfmt

pytest.importorskip("pyspark")

from pyspark.sql.streaming.datasource import ReadAllAvailable  # noqa: E402

from spark_datasource.options import ReadOptions  # noqa: E402
from spark_datasource.streaming import RcfmtStreamReader  # noqa: E402
from spark_datasource.types import to_spark_schema  # noqa: E402


def _spark_schema(root: str, options: dict):
    return to_spark_schema(ReadOptions(options).relation_schema(rcfmt.dataset(root).schema))


class Stream:
    """A query's reader: ``schema`` as Spark took it at ``load()`` (now, by default)."""

    def __init__(self, root: str, schema=None, **options):
        self.options = {"path": root, **{k: str(v) for k, v in options.items()}}
        self.reader = RcfmtStreamReader(self.options, schema or _spark_schema(root, self.options))
        self.offset = json.loads(json.dumps(self.reader.initialOffset()))

    def drain(self) -> list[int]:
        """The ids of every row delivered until no new one is available."""
        ids = []
        while True:
            end = self.reader.latestOffset(self.offset, ReadAllAvailable())
            if end == self.offset:
                return ids
            for partition in self.reader.partitions(self.offset, end):
                for batch in self.reader.read(partition):
                    ids += batch.column(batch.schema.get_field_index("id")).to_pylist()
            self.offset = json.loads(json.dumps(end))


def _rows(first: int, n: int, **extra) -> pa.Table:
    ids = np.arange(first, first + n, dtype=np.int64)
    return pa.table({"id": ids, "x": ids * 0.5, **extra})


@pytest.mark.parametrize("change", ["optimize", "checkpoint"])
def test_a_version_that_changes_no_rows_after_its_parent_was_vacuumed(tmp_path, change):
    """optimize()/checkpoint() then vacuum(0) leave the version alone, without its parent:
    a stream that read everything before still delivers the next appends, and one started
    at that version delivers what follows (before: "version 2 ... is no longer there")."""
    root = str(tmp_path / "ds")
    rcfmt.write_dataset(_rows(0, 10), root)
    rcfmt.write_dataset(_rows(10, 10), root)
    stream = Stream(root, startingVersion=1)
    assert sorted(stream.drain()) == list(range(20))
    getattr(rcfmt.dataset(root), change)()  # version 3
    rcfmt.dataset(root).vacuum(retention_seconds=0, enforce_retention_duration=False)
    rcfmt.write_dataset(_rows(40, 5), root)  # version 4
    assert sorted(stream.drain()) == list(range(40, 45))
    assert sorted(Stream(root, startingVersion=3).drain()) == list(range(40, 45))


def test_a_filter_on_a_column_an_evolve_added_streams_the_earlier_versions(tmp_path):
    """The filter option naming a column added by evolve: versions before it hold the
    column as NULL, as a batch read says (before: SchemaError "unknown column 'c'")."""
    root = str(tmp_path / "ds")
    rcfmt.write_dataset(_rows(0, 20), root)
    rcfmt.dataset(root).evolve(add=[("c", pa.int64())])
    rcfmt.write_dataset(_rows(20, 20, c=np.arange(20, 40) % 2), root)
    flt = rcfmt.col("c").is_null() | (rcfmt.col("c") == 1)
    expected = sorted(rcfmt.dataset(root).read(["id"], filter=flt)["id"].to_pylist())
    assert expected == list(range(20)) + list(range(21, 40, 2))
    assert sorted(Stream(root, startingVersion=1, filter="c IS NULL OR c = 1").drain()) == expected


def test_a_stream_whose_schema_changed_before_it_started_names_the_version(tmp_path):
    root = str(tmp_path / "ds")
    rcfmt.write_dataset(_rows(0, 5), root)
    loaded = _spark_schema(root, {"path": root})  # (load(): id, x)
    rcfmt.dataset(root).evolve(rename={"x": "y"})  # version 2
    with pytest.raises(rcfmt.UnsupportedError, match="changed since this stream was defined.*version 2"):
        Stream(root, schema=loaded)


def test_an_evolve_whose_parent_was_vacuumed_is_judged_by_what_it_says(tmp_path):
    """With the evolve's parent gone, what it dropped and renamed is in its own metadata:
    a column added after it is no column it dropped, and one it renamed stops the query."""
    root = str(tmp_path / "ds")
    rcfmt.write_dataset(_rows(0, 5), root)
    rcfmt.dataset(root).evolve(add=[("d", pa.int64())])  # version 2
    rcfmt.write_dataset(_rows(10, 10, d=np.zeros(10, np.int64), c=np.ones(10, np.int64)), root)  # 3 adds c
    rcfmt.dataset(root).vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert sorted(Stream(root, startingVersion=2).drain()) == list(range(10, 20))
    other = str(tmp_path / "renamed")
    rcfmt.write_dataset(_rows(0, 5), other)
    loaded = _spark_schema(other, {"path": other})
    stream = Stream(other, schema=loaded, startingVersion=2)
    rcfmt.dataset(other).evolve(rename={"x": "y"})  # version 2
    rcfmt.write_dataset(pa.table({"id": np.arange(5, 8), "y": np.zeros(3)}), other)
    rcfmt.dataset(other).vacuum(retention_seconds=0, enforce_retention_duration=False)  # (2, the evolve, is version 3's checkpoint: kept)
    assert rcfmt.dataset(other, version=2).version == 2
    with pytest.raises(rcfmt.UnsupportedError, match="version 2 .* 'x', which this stream reads, was dropped or"):
        stream.drain()


def test_an_option_error_is_not_taken_for_a_schema_change(tmp_path):
    root = str(tmp_path / "ds")
    rcfmt.write_dataset(_rows(0, 5), root)
    with pytest.raises(rcfmt.RcfmtError, match="unknown column 'nosuch'") as info:
        Stream(root, filter="nosuch = 1")
    assert not isinstance(info.value, rcfmt.UnsupportedError)


def test_arrow_errors_are_not_taken_for_a_schema_change(tmp_path, monkeypatch):
    from spark_datasource import streaming

    root = str(tmp_path / "ds")
    rcfmt.write_dataset(_rows(0, 5), root)

    def broken(*a, **k):
        raise pa.ArrowInvalid("something of Arrow's")

    monkeypatch.setattr(streaming, "RcfmtReader", broken)
    with pytest.raises(pa.ArrowInvalid, match="something of Arrow's"):
        Stream(root)
