"""PySpark data source for rcfmt, built on rcfmt's public API.

``spark.read.format("rcfmt").load(path)`` works without any call once this package is
installed (Spark discovers the top-level module ``pyspark_rcfmt``, which exposes
:class:`DefaultSource`). :func:`register` registers the source explicitly and enables
filter pushdown (``spark.sql.python.filterPushdown.enabled``). Options: README.md.
:func:`write_clustered` / :func:`cluster_dataframe` / :func:`optimize` cluster a write
across files (range bounds from a sample, range-repartition by key; see
:mod:`spark_datasource.clustering`).

Only ``pyspark.sql.datasource`` is imported here; rcfmt and pyarrow are imported when
the source is used, so a broken install cannot break Spark's discovery of other
``pyspark_*`` sources.
"""
from __future__ import annotations

from .clustering import cluster_dataframe, optimize, write_clustered
from .source import RcfmtDataSource, pushdown_planning, register

DefaultSource = RcfmtDataSource


def read(spark, path, *, filter=None, columns=None, **options):
    """``spark.read.format("rcfmt")`` with the relation-defining options. ``filter``: a
    Spark SQL predicate string (the ``filter`` option: translated exactly, with Spark's
    semantics, or refused) or an rcfmt expression such as ``rcfmt.col("x") > 5`` (the
    ``filterExpr`` option, as JSON: rcfmt's semantics); ``columns``: names. Every scan of
    the returned DataFrame reads only those rows and columns, however Spark replays its
    plans; ``options`` are other read options."""
    from rcfmt.predicate.expr import Expr

    reader = spark.read.format("rcfmt")
    if isinstance(filter, Expr):
        from rcfmt.predicate.expr_json import dumps

        reader = reader.option("filterExpr", dumps(filter))
    elif filter is not None:
        if not isinstance(filter, str):
            raise TypeError("filter must be a SQL predicate string, e.g. \"dt >= DATE '2024-01-01' AND x < 5\", "
                            "or an rcfmt expression, e.g. rcfmt.col(\"x\") < 5")
        reader = reader.option("filter", filter)
    if columns is not None:
        reader = reader.option("columns", ",".join([columns] if isinstance(columns, str) else columns))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(str(path))


def read_scan_stats(stats_dir):
    """Scan statistics of queries run with ``.option("statsDir", stats_dir)``
    (see :func:`spark_datasource.reader.read_scan_stats`)."""
    from .reader import read_scan_stats as _read

    return _read(stats_dir)


__all__ = ["RcfmtDataSource", "DefaultSource", "register", "read", "read_scan_stats", "pushdown_planning",
           "write_clustered", "cluster_dataframe", "optimize"]
