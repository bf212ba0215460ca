"""Distributed clustering through Spark: the same skipping as rcfmt's own optimize.

The data arrive at Spark in random order over several partitions. A write clustered
with :func:`spark_datasource.write_clustered` (sample -> bounds -> key per row ->
range-repartition -> sort within partitions) must skip as well as
``rcfmt.write_dataset(...).optimize(...)`` on the same rows, and clearly better than
``.option("clusterBy", ...)`` alone (which clusters each task's files on their own).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyspark")

import rcfmt  # noqa: E402
import spark_datasource  # noqa: E402
from rcfmt import col  # noqa: E402
from rcfmt.layout import ClusteringSpec  # noqa: E402

N = 40_000
FILE_ROWS = 5_000
BLOCK_ROWS = 1_000
QUERIES = {
    "x range": col("x") < 100,
    "y range": col("y") < 100,
    "x and y ranges": (col("x") >= 400) & (col("x") < 600) & (col("y") < 200),
    "point": (col("x") == 500) & (col("y") == 501),
    "s prefix (not clustered)": col("s") == "v-7",
}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    return pa.table({"id": np.arange(N), "x": rng.integers(0, 1000, N), "y": rng.integers(0, 1000, N),
                     "s": pa.array([f"v-{i % 13}" for i in range(N)])})


def _skipped(path) -> dict[str, float]:
    """Per query: the fraction of the dataset's blocks never read (files pruned by the
    index count with all their blocks); checks each result against pyarrow."""
    ds = rcfmt.dataset(path)
    total_blocks = sum(f.num_blocks for f in ds.files)
    table = ds.read()
    out = {}
    for name, query in QUERIES.items():
        scan = ds.scan(filter=query)
        got = scan.read()
        expected = table.filter(_arrow(query, table))
        assert sorted(got["id"].to_pylist()) == sorted(expected["id"].to_pylist()), name
        st = scan.stats
        read = st.blocks_total - st.blocks_pruned_stats - st.blocks_pruned_bloom - st.blocks_pruned_pages
        out[name] = 1 - read / total_blocks
    return out


def _arrow(query, table):
    return {
        "x range": pc.less(table["x"], 100),
        "y range": pc.less(table["y"], 100),
        "x and y ranges": pc.and_(pc.and_(pc.greater_equal(table["x"], 400), pc.less(table["x"], 600)),
                                  pc.less(table["y"], 200)),
        "point": pc.and_(pc.equal(table["x"], 500), pc.equal(table["y"], 501)),
        "s prefix (not clustered)": pc.equal(table["s"], "v-7"),
    }[next(k for k, v in QUERIES.items() if v is query)]


@pytest.mark.parametrize("curve", ["zorder", "hilbert"])
def test_spark_clustering_skips_as_well_as_optimize(spark, tmp_path, data, curve):
    df = spark.createDataFrame(data.to_pandas()).repartition(4)
    options = {"targetFileRows": FILE_ROWS, "blockRows": BLOCK_ROWS}
    spec = spark_datasource.write_clustered(df, str(tmp_path / "spark"), ["x", "y"], curve=curve,
                                            mode="overwrite", options=options)
    assert spec.fitted and spec.curve == curve
    local = str(tmp_path / "local")
    rcfmt.write_dataset(data, local, target_file_rows=FILE_ROWS, block_rows=BLOCK_ROWS).optimize(
        ["x", "y"], curve=curve, target_file_rows=FILE_ROWS, block_rows=BLOCK_ROWS)
    per_task = str(tmp_path / "per_task")
    df.write.format("rcfmt").mode("overwrite").option("clusterBy", "x,y").option("curve", curve) \
        .option("targetFileRows", FILE_ROWS).option("blockRows", BLOCK_ROWS).save(per_task)

    via_spark, via_python, baseline = _skipped(str(tmp_path / "spark")), _skipped(local), _skipped(per_task)
    for name in QUERIES:
        assert via_spark[name] >= via_python[name] - 0.1, (name, via_spark, via_python)
    mean = {k: np.mean(list(v.values())) for k, v in
            (("spark", via_spark), ("python", via_python), ("per_task", baseline))}
    assert mean["spark"] >= mean["python"] - 0.03, mean
    assert mean["spark"] >= mean["per_task"] + 0.15, mean  # the distributed part is what makes the difference

    ds = rcfmt.dataset(str(tmp_path / "spark"))
    assert ds.num_rows == N and ds.info["clustering"]["scope"] == "partition"
    assert ds.info["clustering"]["curve"] == curve
    assert sorted(ds.read()["id"].to_pylist()) == list(range(N))
    assert max(f.num_rows for f in ds.files) <= FILE_ROWS
    with rcfmt.open(ds.files[0].path) as f:  # the file's rows are in key order of the global spec
        assert ClusteringSpec.from_metadata(f.metadata).columns == ("x", "y")
        keys = spec.keys(f.read())
        assert (np.diff(keys.astype(np.float64)) >= 0).all()


def test_spark_sort_clustering_and_partitions(spark, tmp_path, data):
    t = data.append_column("p", pa.array([["a", "b"][i % 2] for i in range(N)]))
    df = spark.createDataFrame(t.to_pandas()).repartition(3)
    path = str(tmp_path / "sorted")
    spark_datasource.write_clustered(df, path, "y", curve="sort", mode="overwrite",
                                     options={"targetFileRows": 4000, "partitionBy": "p"})
    ds = rcfmt.dataset(path)
    assert ds.partition_by == ["p"] and ds.num_rows == N
    for f in ds.files:
        with rcfmt.open(f.path) as rf:
            ys = rf.read(columns=["y"])["y"].to_numpy()
            assert (np.diff(ys) >= 0).all()
    for p in ("a", "b"):  # per partition, files cover disjoint ranges of y
        spans = sorted((f.stats["y"]["min"], f.stats["y"]["max"]) for f in ds.files if f.partition["p"] == p)
        assert all(hi <= lo for (_, hi), (lo, _) in zip(spans[:-1], spans[1:])), spans


def test_spark_optimize_rewrites_against_the_version_read(spark, tmp_path, data):
    path = str(tmp_path / "opt")
    rcfmt.write_dataset(data, path, target_file_rows=FILE_ROWS)
    version = spark_datasource.optimize(spark, path, ["x", "y"], curve="hilbert",
                                        options={"targetFileRows": FILE_ROWS, "blockRows": BLOCK_ROWS})
    ds = rcfmt.dataset(path)
    assert version == ds.version == 2 and ds.info["operation"] == "overwrite"
    assert sorted(ds.read()["id"].to_pylist()) == list(range(N))
    assert ds.scan(filter=col("x") < 100).stats.files_pruned > 0
    with pytest.raises(Exception, match="expected version 1"):
        spark.range(3).selectExpr("id", "id as x", "id as y", "cast(id as string) as s").write.format("rcfmt") \
            .mode("overwrite").option("expectedVersion", "1").save(path)
    assert rcfmt.dataset(path).version == 2


def test_bad_clustering_arguments(spark, tmp_path, data):
    df = spark.createDataFrame(data.slice(0, 100).to_pandas())
    with pytest.raises(rcfmt.SchemaError, match="nope"):
        spark_datasource.cluster_dataframe(df, ["x", "nope"])
    with pytest.raises(rcfmt.InvalidOptionError):
        spark_datasource.cluster_dataframe(df, ["x"], curve="peano")
    with pytest.raises(rcfmt.InvalidOptionError):
        spark_datasource.cluster_dataframe(df, ["x"], num_partitions=0)
    with pytest.raises(Exception, match="disagrees"):
        df.write.format("rcfmt").mode("append").option("clusterBy", "y").option(
            "clusteringSpec", ClusteringSpec(("x",)).to_json()).save(str(tmp_path / "bad"))


def test_spark_optimize_refuses_types_spark_would_change(spark, tmp_path, data):
    path = str(tmp_path / "unsigned")
    t = data.slice(0, 1000).append_column("u", pa.array(np.arange(1000), pa.uint32()))
    rcfmt.write_dataset(t, path)
    with pytest.raises(rcfmt.UnsupportedError, match=r"\['u'\]"):
        spark_datasource.optimize(spark, path, ["x"])
    assert rcfmt.dataset(path).version == 1


def test_spark_optimize_adopts_a_directory_without_index(spark, tmp_path, data):
    path = tmp_path / "plain"
    path.mkdir()
    for i in range(2):
        rcfmt.write_table(data.slice(i * 2000, 2000), path / f"f{i}.rcfmt")
    version = spark_datasource.optimize(spark, str(path), ["x", "y"], options={"targetFileRows": 1000})
    ds = rcfmt.dataset(str(path))
    assert version == ds.version == 1 and sorted(ds.read()["id"].to_pylist()) == list(range(4000))


def test_spec_with_wide_keys_is_refused_up_front(spark, data):
    df = spark.createDataFrame(data.slice(0, 10).to_pandas())
    with pytest.raises(rcfmt.InvalidOptionError, match="key_bits"):
        spark_datasource.cluster_dataframe(df, ClusteringSpec(("x", "y"), key_bits=128))
