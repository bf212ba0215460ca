"""Clustering a Spark write across files, the way Delta's ``OPTIMIZE ZORDER BY`` does:
range bounds from a sample (driver), a clustering key per row (executors),
range-repartition by key and sort within partitions (Spark's shuffle), then each task
writes files holding one key range.

Spark's Python Data Source API gives a writer no say over how rows reach its tasks (no
required distribution or ordering, checked on pyspark 4.3), so ``.option("clusterBy",
...)`` on its own can only cluster the rows of each task's files. For a layout that is
clustered across files -- and scales past one machine -- prepare the DataFrame::

    from spark_datasource import write_clustered
    write_clustered(df, path, ["l_shipdate", "l_partkey"], curve="hilbert", mode="overwrite")

    # or in two steps
    clustered, spec = cluster_dataframe(df, ["a", "b"], curve="zorder")
    clustered.write.format("rcfmt").option("clusteringSpec", spec.to_json()).save(path)

Keys are those of :class:`rcfmt.layout.ClusteringSpec` fitted once on the driver, so
every executor computes the same keys and :meth:`rcfmt.Dataset.optimize` and Spark
produce the same kind of layout. Cost: one pass to count and sample the input, Spark's
own sampling pass for the range partitioner, and the shuffle.
"""
from __future__ import annotations

import math

__all__ = ["cluster_dataframe", "write_clustered", "optimize", "KEY_COLUMN"]

#: temporary column holding the clustering key (dropped before the write)
KEY_COLUMN = "__rcfmt_cluster_key"


def _spec(cluster_by, curve: str, mapping: str, sample_size: int | None, seed: int):
    from rcfmt.errors import InvalidOptionError
    from rcfmt.layout import ClusteringSpec

    if isinstance(cluster_by, ClusteringSpec):
        spec = cluster_by
    else:
        columns = [c.strip() for c in cluster_by.split(",")] if isinstance(cluster_by, str) else list(cluster_by)
        extra = {} if sample_size is None else {"sample_size": sample_size}
        spec = ClusteringSpec(tuple(columns), curve=curve, mapping=mapping, seed=seed, **extra)
    if spec.curve != "sort" and spec.key_bits > 64:
        raise InvalidOptionError("Spark clustering keys are 64-bit longs: key_bits must be <= 64")
    return spec


def _arrow_schema(df, names):
    """The Arrow types rcfmt stores for the columns ``names`` of ``df``."""
    import pyarrow as pa

    from .types import to_rcfmt_schema

    schema = to_rcfmt_schema(df.schema)
    return pa.schema([schema.field(n) for n in names])


def fit_on_sample(df, spec, total_rows: int):
    """``spec`` with range bounds from a uniform sample (about ``2 * spec.sample_size``
    rows of the clustering columns, collected to the driver)."""
    from rcfmt.errors import SchemaError

    missing = [c for c in spec.columns if c not in df.columns]
    if missing:
        raise SchemaError(f"clusterBy columns {missing} are not columns of {df.columns}")
    if spec.fitted:
        return spec
    fraction = min(1.0, 2.0 * spec.sample_size / max(total_rows, 1))
    sample = df.select(*spec.columns)
    if fraction < 1.0:
        sample = sample.sample(withReplacement=False, fraction=fraction, seed=spec.seed)
    table = sample.toArrow()
    table = table.cast(_arrow_schema(df, spec.columns))
    return spec.fit(table)


def _key_function(spec_json: str, names: list[str], arrow_schema):
    def add_keys(batches):
        import pyarrow as pa
        from rcfmt.layout import ClusteringSpec, to_signed

        spec = ClusteringSpec.from_json(spec_json)
        for batch in batches:
            cols = pa.Table.from_batches([batch]).select(names).cast(arrow_schema)
            keys = to_signed(spec.keys(cols)) if batch.num_rows else []
            yield batch.append_column(KEY_COLUMN, pa.array(keys, pa.int64()))

    return add_keys


def cluster_dataframe(df, cluster_by, *, curve: str = "zorder", mapping: str = "rank",
                      num_partitions: int | None = None, target_file_rows: int | None = None,
                      partition_by=None, sample_size: int | None = None, seed: int = 0):
    """``(clustered DataFrame, fitted ClusteringSpec)``: ``df`` range-partitioned by the
    clustering key into ``num_partitions`` (default ``ceil(rows / (0.9 *
    target_file_rows))`` -- slack for the range partitioner's sampling error, as in
    :mod:`rcfmt.dataset.optimize`) and sorted by it within partitions.
    ``curve`` "sort" range-partitions and sorts on the columns themselves (Spark's
    order: NULLs first). ``partition_by``: Hive partition columns of the write, put
    ahead of the key so a task holds few partitions."""
    from pyspark.sql.types import LongType, StructField, StructType

    from rcfmt.dataset import DEFAULT_TARGET_FILE_ROWS, RANGE_FILL
    from rcfmt.errors import InvalidOptionError

    spec = _spec(cluster_by, curve, mapping, sample_size, seed)
    parts = [] if partition_by is None else ([partition_by] if isinstance(partition_by, str) else list(partition_by))
    if num_partitions is None:
        total = df.count()
        target = target_file_rows or DEFAULT_TARGET_FILE_ROWS
        num_partitions = max(1, math.ceil(total / (RANGE_FILL * target)))
    else:
        if isinstance(num_partitions, bool) or not isinstance(num_partitions, int) or num_partitions < 1:
            raise InvalidOptionError(f"num_partitions must be a positive integer, got {num_partitions!r}")
        total = df.count() if not spec.fitted else 0
    spec = fit_on_sample(df, spec, total)
    if spec.curve == "sort":
        order = [*parts, *spec.columns]
        return df.repartitionByRange(num_partitions, *order).sortWithinPartitions(*order), spec
    names = list(spec.columns)
    schema = StructType([*df.schema.fields, StructField(KEY_COLUMN, LongType(), True)])
    keyed = df.mapInArrow(_key_function(spec.to_json(), names, _arrow_schema(df, names)), schema)
    clustered = keyed.repartitionByRange(num_partitions, *parts, KEY_COLUMN).sortWithinPartitions(KEY_COLUMN)
    return clustered.drop(KEY_COLUMN), spec


def write_clustered(df, path: str, cluster_by, *, curve: str = "zorder", mapping: str = "rank",
                    mode: str = "append", num_partitions: int | None = None, sample_size: int | None = None,
                    seed: int = 0, options: dict | None = None):
    """Cluster ``df`` across files (:func:`cluster_dataframe`) and write it to the rcfmt
    dataset at ``path`` with ``mode`` ("append" or "overwrite") and data source
    ``options`` (``targetFileRows``, ``blockRows``, ``partitionBy``, ...); the fitted
    spec goes to every task (``clusteringSpec``). Returns the spec."""
    from .options import WriteOptions
    from .source import RcfmtDataSource

    options = {str(k): str(v) for k, v in (options or {}).items()}
    parsed = WriteOptions({**options, "path": path})
    clustered, spec = cluster_dataframe(df, cluster_by, curve=curve, mapping=mapping,
                                        num_partitions=num_partitions, target_file_rows=parsed.target_file_rows,
                                        partition_by=parsed.partition_by, sample_size=sample_size, seed=seed)
    df.sparkSession.dataSource.register(RcfmtDataSource)
    writer = clustered.write.format("rcfmt").mode(mode).option("clusteringSpec", spec.to_json())
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(path)
    return spec


def optimize(spark, path: str, cluster_by, *, curve: str = "zorder", mapping: str = "rank",
             num_partitions: int | None = None, options: dict | None = None):
    """Rewrite the rcfmt dataset at ``path`` clustered across files, with Spark: reads
    its latest version and overwrites it, failing with CommitConflictError (and changing
    nothing) if another commit lands meanwhile. Columns whose types Spark cannot
    represent exactly (nanosecond or non-UTC timestamps, unsigned integers, ...) raise
    UnsupportedError before anything is written. Returns the new version number."""
    import pyarrow as pa

    import rcfmt

    from .source import RcfmtDataSource

    from rcfmt.dataset import same_types
    from rcfmt.errors import UnsupportedError

    from .types import to_rcfmt_schema

    spark.dataSource.register(RcfmtDataSource)
    ds = rcfmt.dataset(path)
    reader = spark.read.format("rcfmt")
    if ds.version is not None:  # a directory without index is adopted by the overwrite
        reader = reader.option("version", str(ds.version))
    df = reader.load(path)
    through_spark = to_rcfmt_schema(df.schema)
    if not same_types(pa.schema([through_spark.field(n) for n in ds.schema.names]), ds.schema):
        changed = [f.name for f in ds.schema if not same_types(pa.schema([f]), pa.schema([through_spark.field(f.name)]))]
        raise UnsupportedError(
            f"columns {changed} of {path!r} do not survive Spark's types (e.g. nanosecond timestamps, unsigned "
            "integers, time zones other than UTC); rewriting them through Spark would change the data. Use "
            "rcfmt.dataset(path).optimize(...) instead")
    opts = {"expectedVersion": str(ds.version or 0),
            **({"partitionBy": ",".join(ds.partition_by)} if ds.partition_by else {}), **(options or {})}
    write_clustered(df, path, cluster_by, curve=curve, mapping=mapping, mode="overwrite",
                    num_partitions=num_partitions, options=opts)
    return rcfmt.dataset(path).version
