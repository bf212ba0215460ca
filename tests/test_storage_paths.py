"""What a path argument may be (rcfmt.storage): local paths and file:// URIs work
everywhere; writers and datasets refuse other URIs before anything is read or created
(never taking them for a relative local path such as ./s3:/bucket/ds). Reading single
files from object storage: tests/test_object_storage.py."""
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
    """Dataset writes and vacuum take no object-store URI but s3:// yet, and a URI is
    never a relative local path. (Single files and S3 datasets are written to object
    stores: tests/test_object_storage.py.)"""
    monkeypatch.chdir(tmp_path)
    t = pa.table({"x": [1, 2, 3]})
    calls = []
    if not uri.lower().startswith("s3://"):  # datasets are written to S3 (tests/test_object_storage.py)
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
    # S3 is read and written (Hadoop's s3a:// spelling too); other stores are refused
    for options in (ReadOptions, WriteOptions):
        assert options({"path": "s3a://bucket/t/"}).path == "s3://bucket/t"
        assert options({"path": "S3://bucket/t"}).path == "s3://bucket/t"
        with pytest.raises(UnsupportedError, match="gs:// URIs"):
            options({"path": "gs://bucket/t"})
