"""Writing: tasks stage files, the driver commits them atomically.

``writer()`` (driver) checks the write against the dataset (schema, partitioning),
fixes the base version and creates the job's staging directory
``<root>/_rcfmt/_staging/spark-<job>/``. Each task attempt writes its files under
``.../task-<partition>-<task attempt id>/`` with a :class:`rcfmt.dataset.FileSetWriter` and
returns their index entries (built from each file's footer) in its commit message.
On object storage (``s3://``) tasks write straight to the files' final keys instead
(nothing names them before the commit) and ``abort()`` deletes the files of the
attempts that succeeded. ``commit()`` (driver) renames the files of the successful attempts into place and
commits a new index version (append: rebased onto concurrent commits; overwrite:
:class:`rcfmt.CommitConflictError` if another commit happened since the job started),
then removes the staging directory; until that commit nothing is visible. ``abort()``
and failures of ``commit()`` remove the staging directory and any published file. (Spark
cancels a failed job's other tasks without waiting for them: a task still writing when
``abort()`` runs can leave its attempt's directory under ``_staging``, never named by a
version; :func:`rcfmt.dataset.vacuum` removes such leftovers once older than its
retention.)

``replaceWhere`` (with mode "overwrite"): the write replaces the rows matching a SQL
predicate instead of the whole dataset. ``writer()`` parses the predicate against the
dataset (a bad one, or one naming an unknown column, fails before any task runs) and
checks the written data like an append (columns, types, the dataset's partitioning);
each task checks that every row it writes satisfies the predicate (TRUE, not FALSE or
NULL: Delta's rule; ``replaceWhereCheck=false`` skips it) and fails the job otherwise;
``commit()`` finds the rows of the version the job started from that match the
predicate (a skipping scan), deletes them with deletion vectors and adds the job's files
in one commit (mode "change", history operation ``replaceWhere`` with ``rows_deleted``
and ``rows_inserted``). A commit that landed meanwhile is kept when it left the files
the predicate deletes from as the job read them: e.g. a blind append keeps all its rows,
as if it came after the replaceWhere (Delta's WriteSerializable). One that deleted rows
of those files, rewrote or removed them makes the commit fail with
:class:`rcfmt.CommitConflictError` (nothing becomes visible; run the job again).
"""
from __future__ import annotations

import os
import uuid

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from rcfmt.runtime.records import field, record

from .options import WriteOptions, with_store_settings
from .types import to_rcfmt_schema

__all__ = ["RcfmtWriter", "RcfmtCommitMessage"]


@record
class RcfmtCommitMessage(WriterCommitMessage):
    """Files one task attempt wrote: ``[(FileEntry, staged path), ...]``, and the job's
    staging directory the attempt wrote under (local datasets; None on object storage).
    A streaming micro-batch's ``commit()``/``abort()`` run on a writer Spark makes anew
    (``streamWriter()`` again, so another job id and staging directory): the messages name
    the directory to remove."""

    files: list = field(default_factory=list)
    staging: str | None = None


def _check_names_apart(names: list, what: str) -> None:
    """SchemaError when two of ``names`` differ only in case: Spark matches columns by
    name case-insensitively (``spark.sql.caseSensitive`` is false by default), so it could
    not tell them apart (as its Parquet writer refuses such data; an append of ``A`` to a
    dataset of ``a`` would have made ``a`` and ``A``)."""
    seen: dict = {}
    for name in names:
        other = seen.setdefault(name.lower(), name)
        if other != name:
            from rcfmt.errors import SchemaError

            raise SchemaError(f"columns {other!r} and {name!r} of {what} differ only in case, which Spark does not "
                              f"tell apart; name the written column as the dataset does (or rename one)")


class RcfmtWriter(DataSourceArrowWriter):
    def __init__(self, options, schema: StructType, overwrite: bool):
        self.options = options if isinstance(options, WriteOptions) else WriteOptions(options)
        self._begin(schema, overwrite)

    @with_store_settings
    def _begin(self, schema: StructType, overwrite: bool) -> None:
        from rcfmt.dataset import begin_write
        from rcfmt.errors import CommitConflictError, InvalidOptionError, UnsupportedError
        from rcfmt.storage import is_remote

        self.mode = "overwrite" if overwrite else "append"
        self.replace_where = self.options.replace_where
        if self.replace_where is not None and not overwrite:
            raise InvalidOptionError("option replaceWhere applies to mode 'overwrite' (it replaces the rows "
                                     "matching the predicate); this write is an append")
        self.dynamic = self.options.dynamic_overwrite
        if self.dynamic and (not overwrite or self.replace_where is not None):
            raise InvalidOptionError("option partitionOverwriteMode=dynamic applies to mode 'overwrite' without "
                                     "replaceWhere (it replaces the partitions written to)")
        arrow_schema = to_rcfmt_schema(schema)
        _check_names_apart(arrow_schema.names, "the written data")
        # replaceWhere, dynamic overwrites: the written files join the dataset's, checked as an append's
        self.plan = begin_write(self.options.path, arrow_schema, partition_by=self.options.partition_by,
                                mode="append" if self.replace_where is not None or self.dynamic else self.mode)
        if self.dynamic and self.plan.adopt is not None and self.plan.adopt.num_rows:
            raise UnsupportedError(f"partitionOverwriteMode=dynamic needs a dataset with an index (written by "
                                   f"rcfmt); {self.plan.root!r} is a plain directory of files (append to it once "
                                   f"to create one)")
        if self.plan.dataset_schema is not None:  # (an append: the dataset's columns and the new ones)
            _check_names_apart(self.plan.dataset_schema.names + list(self.plan.partitioning.names), "the dataset")
        expected = self.options.expected_version
        if expected is not None and self.plan.read_version != expected:
            raise CommitConflictError(f"{self.options.path!r} is at version {self.plan.read_version}, the write "
                                      f"expected version {expected}; nothing was written")
        self.replace_expr = None  # the predicate, as an rcfmt expression (Spark's semantics)
        self.replace_check = None  # what tasks check every written row against (None: no check)
        if self.replace_where is not None:
            self._begin_replace()
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

    def _begin_replace(self) -> None:
        """replaceWhere: parse the predicate against the dataset's columns (the written
        data's for a new dataset) and plan the tasks' check of the written rows."""
        from rcfmt.errors import InvalidOptionError, UnsupportedError
        from rcfmt.predicate.nnf import columns as expr_columns
        from rcfmt.predicate.residual import prepare_filter
        from rcfmt.predicate.sql_filter import parse_filter
        from rcfmt.schema.nested import bind_schema

        plan = self.plan
        if plan.adopt is not None and plan.adopt.num_rows:
            raise UnsupportedError(f"replaceWhere needs a dataset with an index (written by rcfmt); {plan.root!r} is "
                                   "a plain directory of files (append to it once to create one)")
        target = plan.base.schema if plan.base is not None else plan.schema
        try:
            self.replace_expr = parse_filter(self.replace_where, bind_schema(target))
        except InvalidOptionError as exc:
            text = str(exc)
            raise InvalidOptionError("replaceWhere option: " + text.removeprefix("filter option: ")) from None
        if self.options.replace_where_check:
            written = bind_schema(plan.schema)
            missing = sorted(c for c in expr_columns(prepare_filter(self.replace_expr, target))
                             if written.get_field_index(c) < 0)
            if missing:
                raise InvalidOptionError(
                    f"replaceWhere names column(s) {missing} that the written data lacks, so its rows cannot be "
                    "checked against the predicate (set replaceWhereCheck=false to write them anyway)")
            self.replace_check = prepare_filter(self.replace_expr, plan.schema)

    def _check_rows(self, batch, seen: int) -> None:
        """replaceWhere: InvalidDataError unless the predicate is TRUE on every row of
        ``batch`` (rows ``seen`` and on of this task)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from rcfmt.errors import InvalidDataError
        from rcfmt.predicate.arrow_eval import evaluate
        from rcfmt.predicate.nnf import columns as expr_columns
        from rcfmt.schema import nested

        if not batch.num_rows:
            return
        types = nested.bind_schema(self.plan.schema)
        names = sorted(expr_columns(self.replace_check))
        table = pa.table({n: _leaf_values(batch, n).cast(types.field(n).type) for n in names})
        ok = np.asarray(pc.fill_null(evaluate(self.replace_check, table), False).to_numpy(zero_copy_only=False), bool)
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            values = {n: table.column(n)[bad].as_py() for n in names}
            raise InvalidDataError(
                f"replaceWhere: written data holds {int((~ok).sum())} row(s) of this task that do not satisfy "
                f"{self.replace_where!r} (e.g. {values}); every written row must (replaceWhereCheck=false "
                "writes them anyway)", row=seen + bad)

    # ------------------------------------------------------------------ executors
    @with_store_settings
    def write(self, iterator) -> RcfmtCommitMessage:
        from pyspark import TaskContext
        from rcfmt.dataset import FileSetWriter

        ctx = TaskContext.get()
        part = ctx.partitionId() if ctx is not None else 0
        # (the task attempt's id, unique in the application: an attempt number starts again
        # at 0 when Spark retries a stage, and a zombie of the old stage attempt would write
        # and, aborting, delete the live attempt's files under the same names)
        attempt = ctx.taskAttemptId() if ctx is not None else 0
        staging = self.staging if self.remote else os.path.join(self.staging, f"task-{part:05d}-{attempt}")
        writer = FileSetWriter(staging, self.plan.schema, self.plan.partitioning,
                               prefix=f"{self.job_id[:12]}-{part:05d}-{attempt}",
                               target_file_rows=self.options.target_file_rows,
                               write_options=self.options.writer_options, clustering=self.clustering)
        try:
            seen = 0
            for batch in iterator:
                if self.replace_check is not None:
                    self._check_rows(batch, seen)
                    seen += batch.num_rows
                writer.write(batch)
            files = writer.close()
        except BaseException:
            writer.abort()  # deletes what this attempt wrote (objects too)
            self.plan.discard(staging)
            raise
        return RcfmtCommitMessage(files, None if self.remote else self.staging)

    # ------------------------------------------------------------------ driver
    @with_store_settings
    def commit(self, messages) -> None:
        self._commit(messages)

    def _commit(self, messages, stream: tuple[str, int] | None = None) -> int | None:
        """Commit the files of ``messages``; the new version (None: none was made).
        ``stream``: a streaming micro-batch (see :func:`rcfmt.dataset.commit`)."""
        try:
            return self._commit_files([f for m in messages if m is not None for f in m.files], stream)
        except BaseException as exc:
            if getattr(exc, "outcome_unknown", False):  # the version may land yet: abort() keeps its files
                self.outcome_unknown = True
            raise
        finally:
            if not self.remote:  # (on object storage the files are in place now)
                for staging in self._stagings(messages):
                    self.plan.discard(staging)

    def _stagings(self, messages) -> list:
        """The local staging directories of this job: this writer's and those the tasks'
        messages name (a streaming micro-batch's tasks wrote under another writer's: Spark
        makes the writer of its commit anew), when they are job directories of this
        dataset's staging area."""
        from rcfmt.dataset import log

        area = os.path.abspath(log.staging_root(self.plan.root))
        out = [self.staging]
        for m in messages or ():
            staging = getattr(m, "staging", None)
            if (isinstance(staging, str) and staging not in out
                    and os.path.dirname(os.path.abspath(staging)) == area
                    and os.path.basename(staging).startswith("spark-")):
                out.append(staging)
        return out

    def _commit_files(self, files: list, stream) -> int | None:
        from rcfmt.dataset import clustering_info, commit

        if self.replace_where is not None:
            return self._commit_replace(files)
        if self.dynamic:
            return self._commit_dynamic(files)
        if stream is not None and not files and self.mode == "append":
            return None  # an empty micro-batch appends nothing: no version
        return commit(self.plan.root, [e for e, _ in files], mode=self.mode, read_version=self.plan.read_version,
                      data_schema=self.plan.data_schema, partitioning=self.plan.partitioning,
                      txn_id=f"spark-{self.job_id}", staged=[(p, e.path) for e, p in files],
                      clustering=None if self.inherited else clustering_info(self.clustering, self.scope),
                      base_table_unindexed=self.plan.adopt, stream=stream)

    def _commit_dynamic(self, files: list) -> int | None:
        """partitionOverwriteMode=dynamic: one commit (mode "rewrite") removing the files
        of the version the job started from in the partitions of ``files``, adding
        ``files``; the new version (None when nothing was written: nothing replaced)."""
        from rcfmt.dataset import clustering_info
        from rcfmt.dataset.commits import commit_version
        from rcfmt.dataset.snapshot import read_snapshot

        plan = self.plan
        if not files:
            return None
        written = {tuple(e.partition) for e, _ in files}
        remove = []
        if plan.read_version:
            snap = read_snapshot(plan.root, plan.read_version)
            remove = [rel for rel, key in zip(snap.paths, snap.partition_values()) if tuple(key) in written]
        version, _ = commit_version(
            plan.root, [e for e, _ in files], mode="rewrite" if remove else "append", read_version=plan.read_version,
            data_schema=plan.data_schema, partitioning=plan.partitioning, txn_id=f"spark-{self.job_id}",
            staged=[(p, e.path) for e, p in files], remove=remove,
            clustering=None if self.inherited else clustering_info(self.clustering, self.scope),
            operation_info={"operation": "overwrite", "partition_overwrite_mode": "dynamic",
                            "partitions_replaced": len(written)})
        return version

    def _commit_replace(self, files: list) -> int | None:
        """replaceWhere: one commit (mode "change") deleting the rows of the version the
        job started from that match the predicate and adding ``files``; the new version
        (None when nothing matched and nothing was written)."""
        from rcfmt.dataset import Dataset, clustering_info
        from rcfmt.dataset.changes import deletion_change
        from rcfmt.dataset.commits import commit_version
        from rcfmt.dataset.deletions import DeletionFileWriter

        plan = self.plan
        root = plan.root
        txn = f"spark-{self.job_id}"
        deletions, remove, expected, rows_deleted = {}, [], {}, 0
        vectors_out = None
        try:
            if plan.read_version:  # the rows the predicate matches in the version the job started from
                vectors_out = DeletionFileWriter(root, txn)
                ds = Dataset.open(root, version=plan.read_version)
                rows_deleted, deletions, remove, expected = deletion_change(ds, self.replace_expr, vectors_out)
            if not rows_deleted and not files:
                return None  # nothing matched, nothing written: no new version
            if vectors_out is not None:
                vectors_out.close()
            version, _ = commit_version(
                root, [e for e, _ in files], mode="change", read_version=plan.read_version,
                data_schema=plan.data_schema, partitioning=plan.partitioning, txn_id=txn,
                staged=[(p, e.path) for e, p in files], remove=remove, deletions=deletions, expected=expected,
                clustering=None if self.inherited else clustering_info(self.clustering, self.scope),
                operation_info={"operation": "replaceWhere", "replace_where": self.replace_where,
                                "rows_deleted": rows_deleted, "rows_inserted": sum(e.num_rows for e, _ in files),
                                "removed_files": len(remove)})
        except BaseException as exc:
            if vectors_out is not None and not getattr(exc, "outcome_unknown", False):
                vectors_out.discard()  # (kept when a version naming them may yet land)
            raise
        return version

    @with_store_settings
    def abort(self, messages) -> None:
        # on object storage, the files of the attempts that succeeded (failed ones deleted their own),
        # unless a commit whose outcome is unknown may name them (vacuum removes them if it does not)
        if getattr(self, "outcome_unknown", False):
            return
        files = [(e.path, p) for m in messages or () if m is not None for e, p in m.files]
        named = _named_by_latest(self.plan.root, [rel for rel, _ in files]) if self.remote and files else set()
        self.plan.discard(self.staging, [p for rel, p in files if rel not in named])
        if not self.remote:
            for staging in self._stagings(messages)[1:]:
                self.plan.discard(staging)


def _leaf_values(batch, name: str):
    """Column ``name`` of ``batch`` (a Spark batch), or the leaf at dotted path ``name``
    under its structs (NULL where a struct on the way is NULL)."""
    from rcfmt.schema import nested

    names = batch.schema.names
    if name in names:
        return batch.column(names.index(name))
    parts = name.split(".")
    for k in range(len(parts) - 1, 0, -1):
        top = ".".join(parts[:k])
        if top in names:
            return nested.under_structs(batch.column(names.index(top)), parts[k:])
    raise KeyError(name)


def _named_by_latest(root: str, paths: list) -> set:
    """Those of ``paths`` (relative) the dataset's latest version names: a commit whose
    answer was lost may have landed (Spark aborts in another process than the one its
    commit failed in, so the commit's own knowledge is lost); all of them when the latest
    version cannot be read (vacuum removes what no version names)."""
    from rcfmt.dataset import Dataset

    try:
        return set(Dataset.open(root).snapshot.paths) & set(paths)
    except Exception:  # (the store is out: keep them)
        return set(paths)
