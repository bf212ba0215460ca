"""Structured Streaming: an exactly-once sink and a source that follows new versions.

Sink (``df.writeStream.format("rcfmt").option("checkpointLocation", ck).start(path)``)
-------------------------------------------------------------------------------------
Each micro-batch is written as a batch write is (tasks stage files, the driver commits
them; same options, partitioning and clustering) and committed as one version that
records the application -- the streaming query's id, read from the checkpoint's
``metadata`` file, or the ``txnAppId`` option -- and the batch id
(:func:`rcfmt.dataset.commit`'s ``stream``). Every version carries the last batch of each
application, so a batch Spark runs again after a crash between the commit and its own
checkpoint finds itself recorded in the version it is based on and commits nothing
(its files are removed): every row once. Appends of concurrent writers (other queries,
batch jobs) rebase as usual. Output mode ``append`` appends; ``complete`` overwrites
the dataset with each batch. An empty append batch makes no version.

Source (``spark.readStream.format("rcfmt").load(path)``)
--------------------------------------------------------
An offset is a position in the sequence of files the stream delivers:
``{"version": v, "index": i, "snapshot": s}`` -- every file before the ``i``-th of
version ``v``'s list is delivered, where the list is the files of version ``v``'s
snapshot (``s`` true: the starting snapshot) or the files version ``v`` added (in index
order). Without ``startingVersion`` the stream starts with the latest version's
snapshot (its deletion vectors applied), then each later version; with it, with the
files that version and the later ones add. Versions that append are delivered; versions
that keep the rows as they are (optimize, checkpoint, an evolve that keeps the stream's
columns) are skipped; versions that delete or rewrite rows fail the query with
:class:`rcfmt.errors.UnsupportedError` unless ``skipChangeCommits`` is set (then they
are skipped, the rows they add too, as Delta does). ``maxFilesPerTrigger`` /
``maxRowsPerTrigger`` bound a micro-batch (at least one file); ``Trigger.AvailableNow``
delivers the versions committed when the query starts, in batches of that bound. The
``filter`` and ``columns`` options apply to every micro-batch, as to batch reads.
"""
from __future__ import annotations

import json
import os

from pyspark.sql.datasource import DataSourceStreamArrowWriter, DataSourceStreamReader
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadMaxFiles, ReadMaxRows,
                                              SupportsTriggerAvailableNow)
from pyspark.sql.types import StructType

from rcfmt.runtime.records import record
from rcfmt.storage.paths import is_remote

from .options import StreamReadOptions, StreamWriteOptions, store_settings, with_store_settings
from .reader import RcfmtInputPartition, RcfmtReader, plan_partitions
from .writer import RcfmtWriter

__all__ = ["RcfmtStreamWriter", "RcfmtStreamReader", "Offset", "query_id"]


# ------------------------------------------------------------------ sink
def query_id(checkpoint_location: str | None) -> str:
    """The id of the streaming query whose checkpoint is at ``checkpoint_location`` (from
    the ``metadata`` file Spark writes there when the query starts: stable across
    restarts of the query, new for a new checkpoint)."""
    from rcfmt.errors import InvalidOptionError

    if not checkpoint_location:
        raise InvalidOptionError("a streaming write to rcfmt needs .option('checkpointLocation', ...) (the "
                                 "checkpoint's query id makes its commits exactly once) or .option('txnAppId', ...)")
    where = str(checkpoint_location).rstrip("/")
    if where.startswith("file:") and not where.startswith("file://"):
        where = where[len("file:"):]
    try:
        lowered = where.lower()
        if lowered.startswith(("s3://", "s3a://", "gs://", "abfs://", "abfss://")):
            from rcfmt.storage import read_object

            if lowered.startswith("s3a://"):
                where = "s3://" + where.split("://", 1)[1]
            raw = read_object(where + "/metadata")
        else:
            from rcfmt.storage import local_path

            with open(os.path.join(os.path.abspath(local_path(where)), "metadata"), "rb") as f:
                raw = f.read()
        found = json.loads(raw.decode().strip().splitlines()[0])["id"]
        if not isinstance(found, str) or not found:
            raise ValueError("no id")
        return found
    except Exception as exc:
        raise InvalidOptionError(f"cannot read the streaming query's id from {checkpoint_location!r}/metadata "
                                 f"({type(exc).__name__}: {exc}); set .option('txnAppId', <a name unique to this "
                                 "query>) for exactly-once commits") from None


class RcfmtStreamWriter(RcfmtWriter, DataSourceStreamArrowWriter):
    """One micro-batch of a streaming write (Spark makes one per batch)."""

    def __init__(self, options, schema: StructType, overwrite: bool):
        opts = options if isinstance(options, StreamWriteOptions) else StreamWriteOptions(options)
        self.application = opts.application or query_id(opts.checkpoint_location)
        super().__init__(opts, schema, overwrite)

    @with_store_settings
    def commit(self, messages, batchId: int) -> None:
        self._commit(messages, stream=(self.application, int(batchId)))

    def abort(self, messages, batchId: int) -> None:
        super().abort(messages)


# ------------------------------------------------------------------ source
def _names_known(expr, schema) -> bool:
    """Whether every column ``expr`` names (its top-level field) is in ``schema``."""
    from rcfmt.predicate.nnf import columns

    return all(schema.get_field_index(name.split(".")[0]) >= 0 for name in columns(expr))


@record(frozen=True)
class Offset:
    """Every file before the ``index``-th of version ``version``'s list is delivered (the
    list: the version's snapshot when ``snapshot``, else the files it added)."""

    version: int
    index: int = 0
    snapshot: bool = False

    @classmethod
    def of(cls, raw: dict) -> "Offset":
        from rcfmt.errors import InvalidOptionError

        try:
            return cls(int(raw["version"]), int(raw.get("index", 0)), bool(raw.get("snapshot", False)))
        except (KeyError, TypeError, ValueError):
            raise InvalidOptionError(f"not an rcfmt stream offset: {raw!r}") from None

    def json(self) -> dict:
        return {"version": self.version, "index": self.index, "snapshot": self.snapshot}

    def key(self) -> tuple:
        return (self.version, self.index)


class RcfmtStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of the files new versions add (see the module docstring)."""

    def __init__(self, options, schema: StructType):
        self.options = options if isinstance(options, StreamReadOptions) else StreamReadOptions(options)
        try:
            self.scan = RcfmtReader(self.options, schema)  # what every micro-batch reads, and how
        except (ValueError, TypeError) as exc:
            import pyarrow as pa
            from rcfmt.errors import RcfmtError

            if isinstance(exc, (RcfmtError, pa.ArrowException)):  # (an option's own error, or Arrow's)
                raise
            raise self._schema_changed(exc) from None  # (_resolve_columns: the schema taken at load() no longer fits)
        if self.scan.version is None:
            from rcfmt.errors import UnsupportedError

            raise UnsupportedError(f"a streaming read needs a dataset with versions (written by rcfmt); "
                                   f"{self.options.path!r} has none")
        self.root = self.scan.dataset().root
        self._lists: dict = {}  # (version, snapshot) -> [(path, live rows)] it delivers
        self._nothing: set = set()  # versions that deliver no file
        self._target = None  # Trigger.AvailableNow: the last version to deliver

    def _schema_changed(self, why: Exception):
        from rcfmt.dataset import log
        from rcfmt.errors import UnsupportedError

        try:
            with store_settings(self.options):
                latest = f", by version {log.latest_version(self.options.path)} or an earlier one"
        except Exception:  # (the message only: the error to report is the schema's)
            latest = ""
        return UnsupportedError(f"the schema of {self.options.path!r} changed since this stream was defined "
                                f"(load()){latest}: {why}; define the stream again to read the new schema")

    def __getstate__(self):  # (tasks need the scan only)
        state = dict(self.__dict__)
        state["_lists"], state["_nothing"] = {}, set()
        return state

    # -------------------------------------------------------------- offsets
    @with_store_settings
    def _latest(self) -> int:
        from rcfmt.dataset import log

        return log.latest_version(self.root)

    def initialOffset(self) -> dict:
        start = self.options.starting_version
        if start == "latest":
            return Offset(self._latest() + 1).json()
        if start is None:
            return Offset(self._latest(), 0, True).json()
        return Offset(start).json()

    def getDefaultReadLimit(self):
        if self.options.max_files is not None:
            return ReadMaxFiles(self.options.max_files)
        if self.options.max_rows is not None:
            return ReadMaxRows(self.options.max_rows)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest()

    def reportLatestOffset(self):
        return Offset(self._latest() + 1).json()

    def latestOffset(self, start: dict, limit=None) -> dict:
        pos = first = Offset.of(start)
        last = self._target if self._target is not None else self._latest()
        max_files = max_rows = None
        if not isinstance(limit, ReadAllAvailable):
            max_files = limit.max_files if isinstance(limit, ReadMaxFiles) else self.options.max_files
            max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else self.options.max_rows
        from rcfmt.errors import UnsupportedError

        files = rows = 0
        while pos.version <= last:
            try:
                listed = self._files(pos.version, pos.snapshot)
            except UnsupportedError:
                if not files:
                    raise
                break  # deliver what comes before the version, then fail on it
            for i in range(pos.index, len(listed)):
                n = listed[i][1]
                if files and ((max_files is not None and files >= max_files)
                              or (max_rows is not None and rows + n > max_rows)):
                    return {**Offset(pos.version, i, pos.snapshot).json(), "from": first.json()}
                files, rows = files + 1, rows + n
            pos = Offset(pos.version + 1)
        # (no file: no micro-batch, even past versions without one). An end offset names its
        # start: a first batch replayed after a failure gets initialOffset() computed again,
        # from the dataset as it is then, and partitions() plans from the start it had.
        return {**pos.json(), "from": first.json()} if files else start

    @with_store_settings
    def _files(self, version: int, snapshot: bool) -> list:
        """The files ``(path, live rows)`` the stream delivers for version ``version``
        (its snapshot, or what it added); UnsupportedError for a version that deletes
        or rewrites rows (unless ``skipChangeCommits``) or drops a streamed column."""
        key = (version, snapshot)
        if key in self._lists:
            return self._lists[key]
        if not snapshot and version in self._nothing:
            return []
        listed = self._list(version, snapshot)
        if not listed and not snapshot:
            self._nothing.add(version)  # (walked past on every trigger until a file comes)
        else:
            if len(self._lists) >= 64:
                self._lists.pop(next(iter(self._lists)))
            self._lists[key] = listed
        return listed

    def _list(self, version: int, snapshot: bool) -> list:
        from rcfmt.dataset import Dataset
        from rcfmt.dataset.snapshot import read_version_info
        from rcfmt.dataset.version_changes import NO_DATA_CHANGE, version_changes
        from rcfmt.errors import UnsupportedError

        if snapshot:
            return [(f.path, f.live_rows) for f in Dataset.open(self.root, version=version).get_fragments()]
        info = read_version_info(self.root, version) or {}
        if info.get("operation") in NO_DATA_CHANGE:  # (known from the version alone: its parent may be vacuumed)
            return []
        if info.get("operation") == "evolve":
            self._check_evolve(version)
            return []
        changes = version_changes(self.root, version)
        if changes.operation in NO_DATA_CHANGE:
            return []
        if changes.operation == "evolve":
            self._check_evolve(version)
            return []
        if changes.changes_rows:
            if self.options.skip_change_commits:
                return []
            raise UnsupportedError(
                f"version {version} of {self.root!r} ({changes.operation}) deletes or rewrites rows "
                f"({len(changes.removed)} file(s) removed, rows deleted from {len(changes.vectors_changed)}); a "
                "stream delivers appended rows only. Set .option('skipChangeCommits', 'true') to skip such "
                "versions (the rows they add too), or restart the query with a later startingVersion")
        if changes.added:
            self._check_types(version, changes.info)
        return [(self._absolute(p), n) for p, n in zip(changes.added, changes.added_rows)]

    def _check_types(self, version: int, info: dict) -> None:
        """UnsupportedError when version ``version`` (which adds files) holds a column this
        stream reads in a type the stream's does not hold (an append widened it since)."""
        from rcfmt.dataset.evolution import widens
        from rcfmt.dataset.index import schema_from_json
        from rcfmt.errors import UnsupportedError

        if "schema" not in info:
            return
        now, streamed = schema_from_json(info["schema"]), self.scan.dataset_schema
        for name in self.scan.columns:
            top = name.split(".")[0]
            if now.get_field_index(top) < 0 or streamed.get_field_index(top) < 0:
                continue
            if not widens(now.field(top).type, streamed.field(top).type):  # (narrower before: read widened)
                raise UnsupportedError(
                    f"version {version} of {self.root!r} changed the type of column {top!r}, which this stream "
                    f"reads, from {streamed.field(top).type} to {now.field(top).type} (an append widened it); "
                    f"restart the query to read the new schema")

    def _absolute(self, relpath: str) -> str:
        """A data file's path as its fragments name it."""
        return os.path.join(self.root, *relpath.split("/"))

    def _check_evolve(self, version: int) -> None:
        """UnsupportedError when evolve version ``version`` dropped, renamed or retyped a
        column this stream reads (added columns are not read: the stream keeps its schema)."""
        from rcfmt.errors import UnsupportedError

        from rcfmt.dataset.index import schema_from_json
        from rcfmt.dataset.snapshot import read_version_info

        info = read_version_info(self.root, version) or {}
        parent = read_version_info(self.root, version - 1)
        if parent is None:  # (vacuumed: the evolve says itself what it dropped and renamed)
            gone = set(info.get("dropped_columns_now") or ()) | set(info.get("renamed_columns_now") or {})
            for name in self._columns_named():
                if name.split(".")[0] in gone:
                    raise UnsupportedError(
                        f"version {version} of {self.root!r} changed the schema: column {name.split('.')[0]!r}, "
                        f"which this stream reads, was dropped or renamed; restart the query (from "
                        f"startingVersion {version + 1}) to read the new schema")
            return
        before, after = schema_from_json(parent["schema"]), schema_from_json(info["schema"])
        for name in self._columns_named():
            top = name.split(".")[0]
            if before.get_field_index(top) < 0:
                continue  # (added later: files of this version and before lack it)
            if after.get_field_index(top) < 0 or after.field(top).type != before.field(top).type:
                raise UnsupportedError(
                    f"version {version} of {self.root!r} changed the schema: column {top!r}, which this stream "
                    "reads, was dropped, renamed or retyped; restart the query (from startingVersion "
                    f"{version + 1}) to read the new schema")

    def _columns_named(self) -> list[str]:
        """The columns this stream reads and those its ``filter`` option names."""
        from rcfmt.predicate.nnf import columns

        named = columns(self.scan.relation_filter) if self.scan.relation_filter is not None else set()
        return list(self.scan.columns) + sorted(named - set(self.scan.columns))

    # -------------------------------------------------------------- batches
    @with_store_settings
    def partitions(self, start: dict, end: dict) -> list:
        from rcfmt.dataset import Dataset

        # (the start the end was planned from: Spark's start of a replayed first batch is
        # initialOffset() again, which moves with the dataset)
        pos, stop = Offset.of(end.get("from", start) if isinstance(end, dict) else start), Offset.of(end)
        fragments = []
        while pos.key() < stop.key():
            listed = self._files(pos.version, pos.snapshot)
            upto = stop.index if pos.version == stop.version else len(listed)
            wanted = {p for p, _ in listed[pos.index:upto]}
            if wanted:
                self._check_present(pos.version, wanted)
                ds = Dataset.open(self.root, version=pos.version)
                flt = self.scan.relation_filter
                if flt is not None and not _names_known(flt, ds.schema):  # (a column added since: every
                    flt = None                                             # file kept; each file's read filters)
                fragments += [f for f in ds.get_fragments(flt) if f.path in wanted]
            if pos.version == stop.version:
                break
            pos = Offset(pos.version + 1)
        groups = plan_partitions(fragments, self.options.max_partition_bytes, self.options.min_partitions)
        return [RcfmtInputPartition(i, g) for i, g in enumerate(groups)]

    def _check_present(self, version: int, paths) -> None:
        """UnsupportedError naming ``version`` when a data file of it is gone: vacuum
        keeps the index of a version older than its retention when a later one is read
        from its chain, not its files (a query that fell behind vacuum). Local datasets
        only (a stat a file; on object storage the read fails on the missing object)."""
        if is_remote(self.root):
            return
        for path in sorted(paths):
            if not os.path.exists(path):
                from rcfmt.errors import UnsupportedError

                raise UnsupportedError(
                    f"version {version} of {self.root!r} is no longer readable: its data file {path!r} is gone "
                    f"(vacuum removed it; the query fell behind vacuum's retention); restart the query with a "
                    f"later startingVersion")

    def read(self, partition):
        return self.scan.read(partition)

    def commit(self, end: dict) -> None:
        pass
