"""The rcfmt Spark data source (``spark.read.format("rcfmt")``, ``df.write.format("rcfmt")``).

Filter pushdown and the ``spark.sql.python.filterPushdown.enabled`` conf
------------------------------------------------------------------------
Spark (4.1+) calls ``pushFilters`` only from its filter-pushdown planning worker
(``pyspark/sql/worker/data_source_pushdown_filters.py``), which it uses when the conf is
on and the query has filters. Every other planning goes through
``plan_data_source_read.py``, which *refuses* any reader that overrides ``pushFilters``
when the conf is off (``DATA_SOURCE_PUSHDOWN_DISABLED``), even for reads without
filters. So :meth:`RcfmtDataSource.reader` returns a reader class that overrides
``pushFilters`` only when it is called from the pushdown worker (found by walking the
Python stack to Spark's worker module) and a plain reader otherwise: with the conf off
no read fails, Spark evaluates all filters itself, and files, blocks and pages are not
pruned (the scan still reads only the columns of a user-supplied schema). With the
conf on, filters are pushed. Outside Spark's workers (direct calls, tests) the reader
offers pushdown. :func:`register` registers the source and turns the conf on.

Spark 4.1-4.3 reuse a pushdown read plan in other scans
-------------------------------------------------------
Those versions store the read plan (partitions + read function) that filter pushdown
produced on the *relation* (``PythonDataSourceV2.setReadInfo``), and every other scan
of the same DataFrame that pushes no filter itself executes that plan as is: a later
``df.count()`` after ``df.filter(...).collect()``, and every branch of a query that
scans the DataFrame twice (``df.filter(a).union(df.filter(b))``, self-joins) all get
the *last* pushed plan. A source that prunes with pushed filters then silently loses
rows (checked on 4.3.0; fixed upstream when read info became scoped to the scan,
together with limit pushdown, which added ``DataSourceReader.pushLimit``).

So the ``pushdown`` option defaults to ``auto``: pushdown is offered where Spark scopes
the read plan to its scan and *not* on 4.1-4.3, where every read is correct but
unpruned. ``.option("pushdown", "true")`` turns it on there for DataFrames scanned once
per query. The reader then:

- hands every filter back to Spark (which re-applies them after the scan, as it does
  for its own Parquet source) while using the exact translations to prune files,
  blocks and pages and to filter rows early;
- records which SQL execution first runs each plan (``<root>/_rcfmt/_scans/<plan>``,
  created atomically); in any other execution (a later query given the plan, or a
  repeated action) the plan's tasks read every file -- the partitions carry the pruned
  ones too -- without the filter: correct for both, only unpruned.

What stays unsafe with ``pushdown=true`` on 4.1-4.3: scanning the same DataFrame twice
in one query with different filters, or running an unfiltered query on a DataFrame
whose filtered query was planned (``explain()``, ``persist()``) but not yet executed.
Load the DataFrame again for such uses.
"""
from __future__ import annotations

import os
import sys

from pyspark.sql.datasource import DataSource

__all__ = ["RcfmtDataSource", "register", "pushdown_planning"]

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
_PUSHDOWN_WORKER = "data_source_pushdown_filters.py"
_SPARK_WORKER_DIR = os.path.join("pyspark", "sql", "worker")


def pushdown_planning(frame=None) -> bool:
    """True unless called (directly or not) from a Spark planning worker other than the
    filter-pushdown one."""
    f = frame or sys._getframe(1)
    in_spark_worker = False
    while f is not None:
        filename = f.f_code.co_filename
        if filename.endswith(_PUSHDOWN_WORKER):
            return True
        if _SPARK_WORKER_DIR in filename:
            in_spark_worker = True
        f = f.f_back
    return not in_spark_worker


class RcfmtDataSource(DataSource):
    """Reads a single rcfmt file, a dataset directory (with its stats index) or a plain
    directory of rcfmt files (Hive partitions inferred); writes datasets. Reads and
    counts leave out the rows deleted by deletion vectors (``Dataset.delete``,
    ``update``, ``merge``). Writes append, overwrite, or with
    ``.mode("overwrite").option("replaceWhere", "<SQL predicate>")`` replace just the
    rows matching the predicate in one commit (every written row must match it; see
    :class:`~spark_datasource.options.WriteOptions`). Streaming: an exactly-once sink and
    a source of the rows new versions append (:mod:`spark_datasource.streaming`).
    Options are documented in README.md."""

    @classmethod
    def name(cls) -> str:
        return "rcfmt"

    def schema(self):
        import time

        started = time.time()
        from rcfmt.dataset import Dataset

        from .options import LOADED_VERSION, ReadOptions, store_settings
        from .types import to_spark_schema

        opts = ReadOptions(self.options)
        with store_settings(opts):
            ds = Dataset.open(opts.path, version=opts.version)
        if ds.version is None and ds.num_files == 0:  # (as Spark's file sources: no schema to infer)
            from rcfmt.errors import SchemaError

            raise SchemaError(f"no rcfmt data at {opts.path!r}: the directory holds no rcfmt file and no dataset "
                              f"index, so there is no schema to read")
        if opts.version is None and ds.version is not None:  # every action of this relation reads this version
            self.options[LOADED_VERSION] = str(ds.version)
        schema = ds.schema
        out = to_spark_schema(opts.relation_schema(schema))
        if opts.stats_dir:  # (where a query's time goes: spark_datasource.timeline)
            from .timeline import process_info, write_record

            write_record(opts.stats_dir, "schema", {"start": started, "end": time.time(), **process_info()})
        return out

    def reader(self, schema):
        from .reader import RcfmtPushdownReader, RcfmtReader

        from .options import ReadOptions

        opts = ReadOptions(self.options)
        offer = pushdown_planning(sys._getframe(1)) and opts.pushdown
        return (RcfmtPushdownReader if offer else RcfmtReader)(opts, schema)

    def writer(self, schema, overwrite: bool):
        from .writer import RcfmtWriter

        return RcfmtWriter(self.options, schema, overwrite)

    def streamWriter(self, schema, overwrite: bool):
        from .streaming import RcfmtStreamWriter

        return RcfmtStreamWriter(self.options, schema, overwrite)

    def streamReader(self, schema):
        from .streaming import RcfmtStreamReader

        return RcfmtStreamReader(self.options, schema)


def register(spark, *, pushdown: bool = True) -> None:
    """Register the rcfmt source on ``spark`` (not needed when ``pyspark_rcfmt`` is
    importable: Spark finds it by itself) and enable filter pushdown."""
    spark.dataSource.register(RcfmtDataSource)
    if pushdown:
        spark.conf.set(PUSHDOWN_CONF, "true")
