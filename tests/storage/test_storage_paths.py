"""What a path argument may be (rcfmt.storage): local paths and file:// URIs work
everywhere; writers and datasets refuse other URIs before anything is read or created
(never taking them for a relative local path such as ./s3:/bucket/ds). Reading single
files from object storage: tests/storage/test_object_storage.py."""
from __future__ import annotations

import os
import pathlib

import pyarrow as pa
import pytest

import rcfmt
from rcfmt.errors import InvalidOptionError, UnsupportedError
from rcfmt.dataset import vacuum
from rcfmt.storage import local_path

URIS = ["s3://bucket/ds", "gs://b/x.rcfmt", "abfs://c@acct.dfs.core.windows.net/p", "hdfs://nn:8020/p",
        "S3A://bucket/ds", "http://host/f.rcfmt"]


def test_local_paths_and_file_uris(tmp_path):
    assert local_path("a/b.rcfmt") == "a/b.rcfmt"
    assert local_path(pathlib.Path("x")) == "x"
    assert local_path(f"file://{tmp_path}/f%20g.rcfmt") == str(tmp_path / "f g.rcfmt")
    assert local_path("file://localhost/tmp/x") == "/tmp/x"
    with pytest.raises(UnsupportedError, match="host"):
        local_path("file://otherhost/tmp/x")
    with pytest.raises(InvalidOptionError):
        local_path("")
    with pytest.raises(InvalidOptionError, match="int"):
        local_path(5)


@pytest.mark.parametrize("uri", URIS)
def test_uris_are_refused_and_nothing_is_created(tmp_path, monkeypatch, uri):
    """Dataset writes and vacuum take no object-store URI but s3://, gs:// and Azure's
    yet, and a URI is never a relative local path. (Single files and S3, GCS and Azure
    datasets are written to object stores: tests/test_object_storage*.py.)"""
    monkeypatch.chdir(tmp_path)
    t = pa.table({"x": [1, 2, 3]})
    calls = []
    if not uri.lower().startswith(("s3://", "gs://", "abfs://")):  # datasets are written there
        calls += [lambda: rcfmt.write_dataset(t, uri), lambda: vacuum(uri)]
    for call in calls:
        with pytest.raises(UnsupportedError, match="not supported"):
            call()
    if uri.startswith("http:"):  # no filesystem for it: refused before anything is written
        with pytest.raises(UnsupportedError, match="http"):
            rcfmt.write_table(t, uri)
    assert os.listdir(tmp_path) == []  # no ./s3:/bucket/ds


def test_file_uri_round_trip(tmp_path):
    t = pa.table({"x": [1, 2, 3]})
    rcfmt.write_table(t, f"file://{tmp_path}/f.rcfmt")
    assert rcfmt.read_table(f"file://{tmp_path}/f.rcfmt").equals(t)
    rcfmt.write_dataset(t, f"file://{tmp_path}/ds")
    assert rcfmt.dataset(f"file://{tmp_path}/ds").to_table().equals(t)
    assert rcfmt.dataset(str(tmp_path / "ds")).num_rows == 3


def test_cli_refuses_a_uri_with_the_error_text():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "rcfmt.cli", "inspect", "nosuchscheme://bucket/f.rcfmt"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "rcfmt: error:" in proc.stderr and "nosuchscheme" in proc.stderr


def test_spark_options_take_file_uris_and_refuse_others():
    pytest.importorskip("pyspark")
    from spark_datasource.options import ReadOptions, WriteOptions

    assert ReadOptions({"path": "file:/tmp/x"}).path == "/tmp/x"  # Hadoop's form
    assert ReadOptions({"path": "file:///tmp/x"}).path == "/tmp/x"
    # S3 (Hadoop's s3a:// spelling too) and GCS are read and written; other stores are refused
    for options in (ReadOptions, WriteOptions):
        assert options({"path": "s3a://bucket/t/"}).path == "s3://bucket/t"
        assert options({"path": "S3://bucket/t"}).path == "s3://bucket/t"
        assert options({"path": "gs://bucket/t/"}).path == "gs://bucket/t"
        assert options({"path": "abfss://c@acct.dfs.core.windows.net/t/"}).path == "abfss://c@acct.dfs.core.windows.net/t"
        assert options({"path": "az://c/t"}).path == "az://c/t"
        with pytest.raises(UnsupportedError, match="hdfs:// URIs"):
            options({"path": "hdfs://nn:8020/t"})


def test_spark_s3_options_in_rcfmt_and_hadoop_spellings():
    pytest.importorskip("pyspark")
    from spark_datasource.options import ReadOptions, WriteOptions

    hadoop = {"path": "s3a://b/t", "fs.s3a.endpoint": "http://127.0.0.1:9000", "fs.s3a.access.key": "AK",
              "fs.s3a.secret.key": "SK", "fs.s3a.endpoint.region": "eu-west-1"}
    ours = {"path": "s3://b/t", "s3.endpoint": "http://127.0.0.1:9000", "S3.AccessKey": "AK", "s3.secretKey": "SK",
            "s3.region": "eu-west-1"}
    conf = {"path": "s3://b/t", **{f"spark.hadoop.{k}": v for k, v in hadoop.items() if k != "path"}}
    want = {"endpoint": "http://127.0.0.1:9000", "access_key": "AK", "secret_key": "SK", "region": "eu-west-1"}
    for options in (ReadOptions, WriteOptions):
        for given in (hadoop, ours, conf):
            assert options(given).s3 == want and options(given).path == "s3://b/t"
        assert options({"path": "s3://b/t"}).s3 is None  # the environment's AWS_* alone
        with pytest.raises(rcfmt.InvalidOptionError, match="together"):
            options({"path": "s3://b/t", "s3.accessKey": "AK"})
        with pytest.raises(rcfmt.InvalidOptionError, match="twice"):
            options({"path": "s3://b/t", "s3.region": "a", "fs.s3a.endpoint.region": "b"})


def test_spark_azure_options_in_rcfmt_and_hadoop_spellings():
    pytest.importorskip("pyspark")
    from spark_datasource.options import ReadOptions, WriteOptions

    path = "abfss://c@acct.dfs.core.windows.net/t"
    for options in (ReadOptions, WriteOptions):
        assert options({"path": path}).azure is None  # the environment's AZURE_STORAGE_* alone
        assert options({"path": path, "fs.azure.account.key.acct.dfs.core.windows.net": "S0VZ"}).azure == \
            {"account_name": "acct", "account_key": "S0VZ"}
        assert options({"path": path, "spark.hadoop.fs.azure.sas.fixed.token.acct.dfs.core.windows.net": "sv=1"}
                       ).azure == {"account_name": "acct", "sas_token": "sv=1"}
        assert options({"path": path, "Azure.ConnectionString": "AccountName=acct;AccountKey=S0VZ"}).azure == \
            {"connection_string": "AccountName=acct;AccountKey=S0VZ"}
        assert options({"path": path, "azure.accountKey": "S0VZ", "azure.endpoint": "http://127.0.0.1:1/acct"}
                       ).azure == {"account_key": "S0VZ", "endpoint": "http://127.0.0.1:1/acct"}
        with pytest.raises(rcfmt.InvalidOptionError, match="twice"):
            options({"path": path, "azure.accountName": "x", "fs.azure.account.key.acct.dfs.core.windows.net": "k"})
        with pytest.raises(rcfmt.InvalidOptionError, match="alone"):
            options({"path": path, "azure.connectionString": "AccountName=a", "azure.sasToken": "s"})


def test_s3_settings_choose_the_client_and_are_undone_after():
    import pyarrow.fs as pafs

    from rcfmt.storage import s3, s3_settings
    from rcfmt.storage.registry import from_uri

    settings = {"endpoint": "http://127.0.0.1:9", "region": "us-east-1", "access_key": "a", "secret_key": "b"}
    with s3_settings(settings):
        fs, path = from_uri("s3://bkt/dir/a%20b.rcfmt")
        assert isinstance(fs, pafs.S3FileSystem) and path == "bkt/dir/a b.rcfmt"
        assert fs.region == "us-east-1" and from_uri("s3://other/x")[0] is fs  # one client per settings
        with s3_settings(None):
            assert s3.current_settings() is None
        assert s3.current_settings() == settings
    assert s3.current_settings() is None
    with pytest.raises(rcfmt.InvalidOptionError, match="unknown S3 settings"):
        with s3_settings({"endpoint_url": "x"}):
            pass


def test_gcs_without_credentials_is_a_storage_error_not_a_long_hang(monkeypatch, tmp_path):
    """On a machine without Google credentials (and no emulator named), a gs:// read,
    listing or write fails with StorageError once the client's bounded retries are spent
    (pyarrow's own default would retry for 15 minutes); nothing is created locally."""
    from rcfmt.storage import gcs

    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setattr(gcs, "GCS_RETRY_SECONDS", 1)
    monkeypatch.chdir(tmp_path)
    t = pa.table({"a": [1, 2]})
    for call in (lambda: rcfmt.read_table("gs://no-bucket/x.rcfmt"), lambda: rcfmt.dataset("gs://no-bucket/ds"),
                 lambda: rcfmt.write_dataset(t, "gs://no-bucket/ds")):
        with pytest.raises(rcfmt.StorageError, match="no-bucket"):
            call()
    assert os.listdir(tmp_path) == []
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-such-key.json"))
    with pytest.raises(rcfmt.StorageError, match="no-such-key"):  # pyarrow raises no OSError for this one
        rcfmt.read_table("gs://no-bucket/x.rcfmt")


def test_gcs_clients_are_kept_for_new_threads_and_share_credentials_found_once(monkeypatch):
    """A google-cloud-storage client serves one thread at a time (HTTP sessions are not
    shared); threads running at once get their own, and a later thread (a new scan's)
    takes one that is idle, so its connections stay warm. Google's default credentials
    are looked up once per environment: new clients do not each ask the metadata server
    or read the key file."""
    import threading

    pytest.importorskip("google.cloud.storage")
    import google.auth
    from google.auth.credentials import AnonymousCredentials

    from rcfmt.storage import gcs

    calls = []
    shared = AnonymousCredentials()

    def default(scopes=None, **kwargs):
        calls.append(scopes)
        return shared, "proj"

    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setattr(google.auth, "default", default)
    monkeypatch.setattr(gcs, "_CREDENTIALS", {})
    monkeypatch.setattr(gcs, "_IDLE", {})
    clients, barrier = [], threading.Barrier(4)

    def use():
        with gcs.client() as client:
            clients.append(client)
            barrier.wait(timeout=10)  # all four hold one at once

    threads = [threading.Thread(target=use) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(c) for c in clients}) == 4
    assert all(c._credentials is shared and c.project == "proj" for c in clients)
    later = []
    t = threading.Thread(target=lambda: later.append(gcs.client().__enter__()))
    t.start()
    t.join()
    assert later[0] in clients and len(calls) == 1  # an idle one, not a new one
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/elsewhere.json")  # another environment: asked again
    with gcs.client() as other:
        assert other not in clients
    assert len(calls) == 2


def test_the_module_names_from_before_the_schema_and_storage_packages_are_gone():
    """``rcfmt.types``, ``rcfmt.nested``, ``rcfmt.statistics``, ``rcfmt.fetch_options``,
    ``rcfmt.s3_source`` and ``rcfmt.azure_store`` were removed (CHANGELOG.md); their
    names live in :mod:`rcfmt.schema` and :mod:`rcfmt.storage`, and the public ones at
    the top level."""
    import importlib

    for old in ("types", "nested", "statistics", "fetch_options", "s3_source", "azure_store"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"rcfmt.{old}")
    from rcfmt.storage import fetch

    assert fetch.FetchOptions is rcfmt.FetchOptions is rcfmt.storage.FetchOptions