"""Planning on the driver (issue 38 item 2): a filtered read whose few surviving blocks
the footers found runs as one task; parsed filters and planned fragments are cached per
dataset version in the planner process, so a new version is planned afresh."""
from __future__ import annotations


import numpy as np
import pyarrow as pa
import pytest

pyspark = pytest.importorskip("pyspark")

import rcfmt  # noqa: E402
from spark_sample import stats_records  # noqa: E402


def _table(lo, n):
    ids = np.arange(lo, lo + n, dtype=np.int64)
    return pa.table({"id": ids, "v": pa.array([f"v{i}" for i in ids], pa.string())})


def test_a_dataset_written_again_at_its_path_is_planned_afresh(spark, tmp_path):
    """A dataset deleted and written again at the same path starts again at version 1:
    the planner's caches (kept by Spark's reused Python workers) know it by its commit,
    so counts, the relation filter and reads see the new rows, not the old files."""
    import shutil

    rc = str(tmp_path / "rc")

    def read():
        def base():
            return spark.read.format("rcfmt")

        return (base().option("columns", "").load(rc).count(), base().load(rc).count(),
                sorted(r.id for r in base().option("filter", "id >= 95").load(rc).collect()))

    rcfmt.write_dataset(_table(0, 100), rc, target_file_rows=50, block_rows=25)
    assert read() == (100, 100, list(range(95, 100)))
    shutil.rmtree(rc)
    rcfmt.write_dataset(_table(0, 250), rc, target_file_rows=100, block_rows=25)
    from rcfmt.dataset import Dataset

    assert Dataset.open(rc).version == 1
    assert read() == (250, 250, list(range(95, 250)))


def test_few_surviving_blocks_run_as_one_task(spark, tmp_path):
    rc = str(tmp_path / "rc")
    rcfmt.write_dataset(_table(0, 20000), rc, target_file_rows=5000, block_rows=500)
    d = str(tmp_path / "stats")
    df = (spark.read.format("rcfmt").option("filter", "id >= 4800 AND id < 5300").option("statsDir", d)
          .option("minPartitions", "4").load(rc))
    assert sorted(r.id for r in df.collect()) == list(range(4800, 5300))
    (plan,) = stats_records(d, "plan")
    assert plan["partitions"] == 1 and plan["blocks_pruned_planning"] > 0
    assert plan["plan_ms"] >= 0 and plan["open_ms"] >= 0
    # without a filter the same dataset is split for parallelism
    d2 = str(tmp_path / "stats2")
    assert spark.read.format("rcfmt").option("statsDir", d2).option("minPartitions", "4").load(rc).count() == 20000
    assert stats_records(d2, "plan")[0]["partitions"] > 1


def test_a_new_version_is_planned_afresh(spark, tmp_path):
    """The planner's caches are keyed by dataset version: the same filter after an
    append sees the appended rows (the planner worker is reused between the queries)."""
    rc = str(tmp_path / "rc")
    rcfmt.write_dataset(_table(0, 3000), rc, target_file_rows=1000, block_rows=250)

    def ids():
        df = spark.read.format("rcfmt").option("filter", "id < 100 OR id >= 2990").load(rc)
        return sorted(r.id for r in df.collect())

    first = ids()
    assert first == list(range(100)) + list(range(2990, 3000))
    assert ids() == first  # planned again from the cache
    rcfmt.write_dataset(_table(3000, 1000), rc, target_file_rows=1000, block_rows=250)
    assert ids() == list(range(100)) + list(range(2990, 4000))
    old = spark.read.format("rcfmt").option("filter", "id >= 2990").option("version", "1").load(rc)
    assert sorted(r.id for r in old.collect()) == list(range(2990, 3000))
