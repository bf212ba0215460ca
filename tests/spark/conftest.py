"""One local SparkSession (local[2], Java 17) for every Spark test module."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def _java_ok() -> bool:
    try:
        return subprocess.run(["java", "-version"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    if not _java_ok():
        pytest.skip("no Java runtime for Spark")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    # workers must import rcfmt, spark_datasource and pyspark_rcfmt (installed or from the tree)
    os.environ["PYTHONPATH"] = os.pathsep.join([ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("rcfmt-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "America/Los_Angeles")
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "256")
               .config("spark.python.worker.reuse", "true")
               .config("spark.driver.memory", "1g")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def pushdown(spark):
    spark.conf.set(PUSHDOWN, "true")
    yield
    spark.conf.set(PUSHDOWN, "false")
