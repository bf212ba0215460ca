"""Writing: tasks stage files, the driver commits them atomically.

``writer()`` (driver) checks the write against the dataset (schema, partitioning),
fixes the base version and creates the job's staging directory
``<root>/_rcfmt/_staging/spark-<job>/``. Each task attempt writes its files under
``.../task-<partition>-<attempt>/`` with a :class:`rcfmt.dataset.FileSetWriter` and
returns their index entries (built from each file's footer) in its commit message.
On object storage (``s3://``) tasks write straight to the files' final keys instead
(nothing names them before the commit) and ``abort()`` deletes the files of the
attempts that succeeded. ``commit()`` (driver) renames the files of the successful attempts into place and
commits a new index version (append: rebased onto concurrent commits; overwrite:
:class:`rcfmt.CommitConflictError` if another commit happened since the job started),
then removes the staging directory; until that commit nothing is visible. ``abort()``
and failures of ``commit()`` remove the staging directory and any published file.
"""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from .options import WriteOptions, with_store_settings
from .types import to_rcfmt_schema

__all__ = ["RcfmtWriter", "RcfmtCommitMessage"]


@dataclass
class RcfmtCommitMessage(WriterCommitMessage):
    """Files one task attempt wrote: ``[(FileEntry, staged path), ...]``."""

    files: list = field(default_factory=list)


class RcfmtWriter(DataSourceArrowWriter):
    def __init__(self, options, schema: StructType, overwrite: bool):
        self.options = options if isinstance(options, WriteOptions) else WriteOptions(options)
        self._begin(schema, overwrite)

    @with_store_settings
    def _begin(self, schema: StructType, overwrite: bool) -> None:
        from rcfmt.dataset import begin_write
        from rcfmt.errors import CommitConflictError
        from rcfmt.storage import is_remote

        self.mode = "overwrite" if overwrite else "append"
        arrow_schema = to_rcfmt_schema(schema)
        self.plan = begin_write(self.options.path, arrow_schema, partition_by=self.options.partition_by,
                                mode=self.mode)
        expected = self.options.expected_version
        if expected is not None and self.plan.read_version != expected:
            raise CommitConflictError(f"{self.options.path!r} is at version {self.plan.read_version}, the write "
                                      f"expected version {expected}; nothing was written")
        self.plan.check_write_options(self.options.writer_options)  # fail before any task
        cluster_by = self.options.clustering_spec or self.options.cluster_by
        self.clustering = self.plan.clustering_for(cluster_by, self.options.curve, self.options.mapping)
        self.inherited = cluster_by is None and self.clustering is not None
        # a spec with global bounds (from spark_datasource.clustering) was range-partitioned
        self.scope = "partition" if self.options.clustering_spec is not None else "file"
        self.job_id = uuid.uuid4().hex
        self.remote = is_remote(self.plan.root)
        # object stores: tasks write straight to the final keys, nothing names them before commit
        self.staging = self.plan.staging_dir(f"spark-{self.job_id}")

    # ------------------------------------------------------------------ executors
    @with_store_settings
    def write(self, iterator) -> RcfmtCommitMessage:
        from pyspark import TaskContext
        from rcfmt.dataset import FileSetWriter

        ctx = TaskContext.get()
        part = ctx.partitionId() if ctx is not None else 0
        attempt = ctx.attemptNumber() if ctx is not None else 0
        staging = self.staging if self.remote else os.path.join(self.staging, f"task-{part:05d}-{attempt}")
        writer = FileSetWriter(staging, self.plan.schema, self.plan.partitioning,
                               prefix=f"{self.job_id[:12]}-{part:05d}-{attempt}",
                               target_file_rows=self.options.target_file_rows,
                               write_options=self.options.writer_options, clustering=self.clustering)
        try:
            for batch in iterator:
                writer.write(batch)
            files = writer.close()
        except BaseException:
            writer.abort()  # deletes what this attempt wrote (objects too)
            self.plan.discard(staging)
            raise
        return RcfmtCommitMessage(files)

    # ------------------------------------------------------------------ driver
    @with_store_settings
    def commit(self, messages) -> None:
        from rcfmt.dataset import clustering_info, commit

        try:
            files = [f for m in messages if m is not None for f in m.files]
            commit(self.plan.root, [e for e, _ in files], mode=self.mode, read_version=self.plan.read_version,
                   data_schema=self.plan.data_schema, partitioning=self.plan.partitioning,
                   txn_id=f"spark-{self.job_id}", staged=[(p, e.path) for e, p in files],
                   clustering=None if self.inherited else clustering_info(self.clustering, self.scope),
                   base_table_unindexed=self.plan.adopt)
        finally:
            if not self.remote:  # (on object storage the files are in place now)
                self.plan.discard(self.staging)

    @with_store_settings
    def abort(self, messages) -> None:
        # on object storage, the files of the attempts that succeeded (failed ones deleted their own)
        self.plan.discard(self.staging, [p for m in messages or () if m is not None for _, p in m.files])
