"""Files and datasets on object storage, read through the client code users run
(pyarrow.fs's S3 client) from a real S3 API server on 127.0.0.1 (moto in server mode,
started here and stopped after): URIs with the endpoint in the environment, a
filesystem object, an fsspec filesystem, request counts of opens and point lookups,
datasets with partitions, filters and versions, missing objects, single files written
there (streamed, appearing whole or not at all), and dataset writes (not supported yet)
refused before anything is created."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import rcfmt
from rcfmt.errors import RcfmtError, UnsupportedError
from rcfmt.storage import DirectoryError

pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")

BUCKET = "rcfmt-test"
ROWS = 20_000


@pytest.fixture(scope="module")
def s3():
    """``(endpoint, boto3 client)`` of an S3 server on 127.0.0.1 with one bucket; the
    AWS_* environment points every S3 client of this process at it."""
    from local_s3 import s3_server

    with s3_server(BUCKET) as (endpoint, _):
        yield endpoint, boto3.client("s3", endpoint_url=endpoint)


def _table() -> pa.Table:
    i = np.arange(ROWS)
    return pa.table({"id": i, "x": np.random.default_rng(5).random(ROWS),
                     "s": pa.array([f"name-{k % 97}" for k in i]).dictionary_encode().cast(pa.string())})


@pytest.fixture
def large_file_reads(monkeypatch):
    """Opens read remote files as they read a large one whose tail holds just its footer
    (4 KiB here), not the whole object (what they do up to 1 MiB), so the scans of the
    ~185 KB test file make the requests whose counts and faults the tests check."""
    import rcfmt.file.reader as reader
    from rcfmt.storage import fetch

    monkeypatch.setattr(fetch, "DEFAULT", rcfmt.FetchOptions(tail_bytes=4096))
    monkeypatch.setattr(reader, "_TAIL_READ", 4096)


@pytest.fixture(scope="module")
def remote_file(s3, tmp_path_factory):
    """``(uri, local path, table)``: one multi-block file, uploaded."""
    _, client = s3
    table = _table()
    local = tmp_path_factory.mktemp("s3") / "f.rcfmt"
    rcfmt.write_table(table, local, block_rows=4096, page_rows=512)
    client.put_object(Bucket=BUCKET, Key="data/f.rcfmt", Body=local.read_bytes())
    return f"s3://{BUCKET}/data/f.rcfmt", local, table


def test_read_table_and_filters_from_a_uri(remote_file):
    uri, local, table = remote_file
    assert rcfmt.read_table(uri).equals(table)
    f = (rcfmt.col("id") >= 5000) & (rcfmt.col("id") < 5100) & (rcfmt.col("s") != "name-3")
    got = rcfmt.read_table(uri, columns=["id", "s"], filter=f)
    assert got.equals(rcfmt.read_table(local, columns=["id", "s"], filter=f)) and got.num_rows == 99


class _ServerLog(logging.Handler):
    """Requests the S3 server answered (moto logs one werkzeug line per request)."""

    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())

    def gets(self, key: str) -> int:
        return sum(1 for line in self.lines if f"GET /{BUCKET}/{key} HTTP" in line)

    def heads(self, key: str) -> int:
        return sum(1 for line in self.lines if f"HEAD /{BUCKET}/{key} HTTP" in line)


@pytest.fixture
def server_log():
    handler = _ServerLog()
    logger = logging.getLogger("werkzeug")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def test_open_and_point_lookup_request_counts(remote_file, server_log, large_file_reads):
    """An open costs 1 request (the 64 KiB tail holding the footer); a point lookup then
    costs the block's page indexes (one request) and one per column's page. The counts
    rcfmt reports (RcfmtFile.requests, ScanStats.requests) are the GETs the server saw."""
    uri, _, _ = remote_file
    with rcfmt.open(uri) as f:
        assert f.size > 64 * 1024  # the header lies outside the tail read
        assert f.requests == 1 and f.num_rows == ROWS and f.num_blocks == 5
        # the open: one GET with a suffix range, which brings the tail and the size (no HEAD)
        assert server_log.gets("data/f.rcfmt") == 1 and server_log.heads("data/f.rcfmt") == 0
        scan = f.scan(filter=rcfmt.col("id") == 12345)
        out = scan.read()
        assert out.column("id").to_pylist() == [12345]
        assert scan.stats.blocks_pruned_stats == 4 and scan.stats.pages_read == 3
        assert f.requests - 1 == 2, f.requests  # the block's page indexes (read once), its pages
        assert scan.stats.requests == f.requests - 1 == server_log.gets("data/f.rcfmt") - 1


def test_take_reads_only_the_pages_holding_wanted_rows(remote_file, server_log, large_file_reads):
    """Rows by position from an object: the blocks' page indexes in one request, then per
    block holding a wanted row one request for its pages (columns coalesced), never the
    chunks; the same rows as the local file, in the order asked."""
    uri, local, table = remote_file
    positions = [12345, 5, 19999, 5]
    with rcfmt.open(uri) as f:
        before, gets = f.requests, server_log.gets("data/f.rcfmt")
        got = f.take(positions)
        assert got.equals(table.take(positions))
        # the page indexes, then the pages of the 3 blocks (one request each at most; here
        # close enough for the fetch plan to read them in one)
        assert 2 <= f.requests - before <= 1 + 3, f.requests - before
        assert server_log.gets("data/f.rcfmt") - gets == f.requests - before
        again = f.requests
        assert f.take([6, 7]).column("id").to_pylist() == [6, 7]
        assert f.requests - again == 1  # the page indexes kept from the first take: only the pages
    with rcfmt.open(uri) as f, rcfmt.open(local) as g:
        hits = f.read(filter=rcfmt.col("s") == "name-3", with_row_position=True)
        assert hits.equals(g.read(filter=rcfmt.col("s") == "name-3", with_row_position=True))
        assert f.take(hits.column("_row_position")).equals(hits.drop_columns(["_row_position"]))


def test_scattered_pages_are_fetched_concurrently_and_counted(s3, server_log, large_file_reads, monkeypatch):
    """Pages far apart in one chunk are separate requests, in flight together (the fetch
    pool is used); the rows are right, and every request is counted once."""
    from rcfmt.storage import fetch

    n = 400_000  # 3.2 MB of doubles: the selected pages lie further apart than the 1 MiB coalescing gap
    t = pa.table({"id": np.arange(n), "v": np.random.default_rng(2).random(n)})
    uri = f"s3://{BUCKET}/scattered/f.rcfmt"
    rcfmt.write_table(t, uri, block_rows=n, page_rows=1000, compression="none", bloom_filter_columns=None)
    used = []
    real_pool = fetch.fetch_pool
    monkeypatch.setattr(fetch, "fetch_pool", lambda: used.append(1) or real_pool())
    ids = [10, 200_500, 399_000]
    expr = rcfmt.col("id").isin(ids)
    server_log.lines.clear()
    for threads in (False, True):
        with rcfmt.open(uri) as f:
            scan = f.scan(filter=expr, use_threads=threads)
            got = scan.read()
            assert scan.stats.requests == f.requests - 1
        assert got.column("id").to_pylist() == ids
        assert got.column("v").to_pylist() == [t["v"][i].as_py() for i in ids]
        assert scan.stats.pages_read == 6  # 3 pages of each column, read apart
    assert used  # the ranges went through the concurrent fetch
    assert server_log.gets("scattered/f.rcfmt") == 2 * (1 + scan.stats.requests)


def test_filesystem_objects(remote_file, s3):
    import pyarrow.fs as pafs

    endpoint, _ = s3
    uri, _, table = remote_file
    fs = pafs.S3FileSystem(endpoint_override=endpoint.removeprefix("http://"), scheme="http", region="us-east-1",
                           access_key="testing", secret_key="testing")
    assert rcfmt.read_table(f"{BUCKET}/data/f.rcfmt", filesystem=fs).equals(table)
    with rcfmt.open(f"{BUCKET}/data/f.rcfmt", filesystem=fs) as f:
        assert f.read(columns=["x"]).column("x").equals(table.column("x"))


def test_fsspec_filesystem(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    table = _table()
    path = tmp_path / "f.rcfmt"
    rcfmt.write_table(table, path)
    assert rcfmt.read_table(str(path), filesystem=fsspec.filesystem("file")).equals(table)
    with pytest.raises(rcfmt.InvalidOptionError, match="filesystem must be"):
        rcfmt.read_table(str(path), filesystem=object())


def test_missing_objects_and_prefixes(remote_file):
    with pytest.raises(FileNotFoundError, match="no such file"):
        rcfmt.open(f"s3://{BUCKET}/data/missing.rcfmt")
    with pytest.raises(DirectoryError, match="is a directory"):  # an RcfmtError and an IsADirectoryError
        rcfmt.open(f"s3://{BUCKET}/data")
    with pytest.raises(UnsupportedError):
        rcfmt.open("nosuchscheme://x/y")


def test_what_cannot_be_written_is_refused_before_anything_is_created(s3):
    from rcfmt.dataset import vacuum

    _, client = s3
    t = _table()
    assert vacuum(f"s3://{BUCKET}/out/ds") == []  # nothing committed there: nothing to clean
    for uri in ("hdfs://nn:8020/ds", "webhdfs://nn:9870/ds"):
        with pytest.raises(UnsupportedError, match="create-if-absent"):  # before any request
            rcfmt.write_dataset(t, uri)
        with pytest.raises(UnsupportedError, match="not supported"):
            vacuum(uri)
    with pytest.raises(rcfmt.InvalidOptionError, match="filesystem"):
        rcfmt.write_dataset(t, "ds", filesystem=object())
    client.put_object(Bucket=BUCKET, Key="out/plain/x.rcfmt", Body=b"not ours")
    with pytest.raises(UnsupportedError, match="no dataset index"):
        rcfmt.write_dataset(t, f"s3://{BUCKET}/out/plain")
    assert _keys(client, "out/") == ["out/plain/x.rcfmt"]
    # a data file of another writer whose first commit is in flight is no plain directory
    client.put_object(Bucket=BUCKET, Key="out/racing/p=1/part-0123456789abcdef-00000.rcfmt", Body=b"in flight")
    assert rcfmt.write_dataset(t, f"s3://{BUCKET}/out/racing").version == 1


def test_the_server_honours_create_if_absent(s3):
    """The commit primitive: a PUT with If-None-Match: * creates once, then is refused."""
    from rcfmt.storage import create_if_absent

    uri = f"s3://{BUCKET}/cia/v1"
    assert create_if_absent(uri, b"first") is True
    assert create_if_absent(uri, b"second") is False
    _, client = s3
    assert client.get_object(Bucket=BUCKET, Key="cia/v1")["Body"].read() == b"first"


def test_a_create_whose_answer_was_lost_is_taken_as_won(s3, monkeypatch):
    """A PUT that landed but whose answer was lost makes boto3's retry find the object
    (412): the bytes there are ours, so the commit stands instead of being rebased into
    a second version holding the same files. Someone else's bytes are a lost race."""
    from rcfmt import storage
    from rcfmt.storage import s3 as s3_store

    real = s3_store.create_if_absent
    seen = []  # (the commit goes through the store's create_if_absent, patched here)

    def landed_but_refused_on_retry(uri, data):
        seen.append(uri)
        real(uri, data)
        return False

    monkeypatch.setattr(s3_store, "create_if_absent", landed_but_refused_on_retry)
    assert storage.create_if_absent(f"s3://{BUCKET}/lost/v1", b"ours") is True
    assert len(seen) == 1 and seen[0].endswith("/lost/v1")
    monkeypatch.setattr(s3_store, "create_if_absent", lambda uri, data: False)
    assert storage.create_if_absent(f"s3://{BUCKET}/lost/v1", b"someone else's") is False
    # refused with nothing there (S3's 409: another create in flight, which did not land): tried again
    refusals = [False]
    monkeypatch.setattr(s3_store, "create_if_absent", lambda uri, data: refusals.pop() if refusals else real(uri, data))
    assert storage.create_if_absent(f"s3://{BUCKET}/lost/v2", b"ours") is True and not refusals
    monkeypatch.setattr(s3_store, "create_if_absent", lambda uri, data: False)
    with pytest.raises(rcfmt.StorageError, match="refused 8 creates") as info:
        storage.create_if_absent(f"s3://{BUCKET}/lost/v3", b"never")
    assert info.value.outcome_unknown  # (one of ours may still be in flight)


def test_a_version_create_left_unanswered_keeps_what_it_names(s3, monkeypatch):
    """The version PUT fails without an answer: if the object is ours it committed (its
    data files stay and are read); if it cannot be found the outcome is unknown, so the
    data files stay (a version naming them may land yet) and vacuum removes them later."""
    from rcfmt import StorageError
    from rcfmt.storage import s3 as s3_store

    uri = f"s3://{BUCKET}/unanswered/t"
    rcfmt.write_dataset(pa.table({"x": [1, 2, 3]}), uri)
    real = s3_store.create_if_absent

    def landed_unanswered(target, data):
        real(target, data)
        raise StorageError("connection reset")

    monkeypatch.setattr(s3_store, "create_if_absent", landed_unanswered)
    assert rcfmt.write_dataset(pa.table({"x": [4, 5]}), uri).version == 2
    assert sorted(rcfmt.dataset(uri).read()["x"].to_pylist()) == [1, 2, 3, 4, 5]

    def lost(target, data):
        raise StorageError("connection reset")

    monkeypatch.setattr(s3_store, "create_if_absent", lost)
    _, client = s3
    before = _keys(client, "unanswered/t/")
    with pytest.raises(StorageError, match="may or may not become visible") as info:
        rcfmt.write_dataset(pa.table({"x": [6]}), uri)
    assert info.value.outcome_unknown
    left = sorted(set(_keys(client, "unanswered/t/")) - set(before))
    assert len(left) == 1 and left[0].endswith(".rcfmt") and "_rcfmt/" not in left[0]
    monkeypatch.undo()
    assert sorted(rcfmt.dataset(uri).read()["x"].to_pylist()) == [1, 2, 3, 4, 5]
    assert rcfmt.dataset(uri).vacuum(retention_seconds=0, enforce_retention_duration=False) == [f"s3://{BUCKET}/{left[0]}"]
    # a delete's deletion-vector file (scattered rows: not inline in the index) stays too
    other = f"s3://{BUCKET}/unanswered/d"
    rcfmt.write_dataset(pa.table({"x": np.arange(30_000)}), other)
    monkeypatch.setattr(s3_store, "create_if_absent", lost)
    before = _keys(client, "unanswered/d/")
    with pytest.raises(StorageError, match="may or may not become visible"):
        rcfmt.dataset(other).delete(rcfmt.col("x").isin(list(range(0, 30_000, 3))))
    vectors = sorted(set(_keys(client, "unanswered/d/")) - set(before))
    assert len(vectors) == 1 and "/_rcfmt/deletions/" in vectors[0]
    monkeypatch.undo()
    assert rcfmt.dataset(other).count_rows() == 30_000



def test_a_create_failing_with_an_exception_no_store_maps_is_read_back(s3, monkeypatch):
    """A client exception that is not a StorageError after the create was sent (a
    checksum failure, a library bug) is an unanswered create like any other: our object
    found there commits; an interrupt while it was out marks the outcome unknown (so the
    data files it names are kept)."""
    from rcfmt import storage
    from rcfmt.storage import s3 as s3_store

    real = s3_store.create_if_absent

    def landed_then_odd_failure(uri, data):
        real(uri, data)
        raise ValueError("checksum mismatch in the client")

    monkeypatch.setattr(s3_store, "create_if_absent", landed_then_odd_failure)
    assert storage.create_if_absent(f"s3://{BUCKET}/odd/v1", b"ours") is True

    def interrupted(uri, data):
        raise KeyboardInterrupt

    monkeypatch.setattr(s3_store, "create_if_absent", interrupted)
    with pytest.raises(KeyboardInterrupt) as info:
        storage.create_if_absent(f"s3://{BUCKET}/odd/v2", b"ours")
    assert info.value.outcome_unknown
    # an interrupt while reading back a create that failed unanswered, or one that was refused
    for create in (lambda uri, data: (_ for _ in ()).throw(rcfmt.StorageError("reset")), lambda uri, data: False):
        monkeypatch.setattr(s3_store, "create_if_absent", create)
        monkeypatch.setattr(s3_store, "read_object", lambda uri: interrupted(uri, None))
        with pytest.raises(KeyboardInterrupt) as info:
            storage.create_if_absent(f"s3://{BUCKET}/odd/v3", b"ours")
        assert info.value.outcome_unknown


def test_vacuum_stops_at_an_index_version_it_cannot_delete(s3, monkeypatch):
    """Vacuum deletes versions only once the hint names the latest, the oldest first,
    and stops at one it cannot delete, before any later version and any data file: the
    versions left stay contiguous and the hint never names a deleted one. Before, a
    failed hint write and a failed delete of version 1 left versions 1 and 4 with the
    hint naming 1: readers took version 1 for the latest, and its data was gone."""
    import importlib

    from rcfmt.dataset import log

    vacuum_module = importlib.import_module("rcfmt.dataset.vacuuming")
    _, client = s3
    uri = f"s3://{BUCKET}/vacfail/t"
    for x in range(4):
        rcfmt.write_dataset(pa.table({"x": [x]}), uri, mode="overwrite" if x == 0 else "append")
    rcfmt.dataset(uri).delete(rcfmt.col("x") == 0)  # version 5: the data of version 1 is not needed by 5
    rcfmt.dataset(uri).checkpoint()  # version 6: no older version is needed to read it
    v1, v3 = log.version_path(uri, 1), log.version_path(uri, 3)
    client.put_object(Bucket=BUCKET, Key="vacfail/t/_rcfmt/_last_version",
                      Body=f"1 {log.object_size(v1)}\n".encode())  # a stale hint...
    real_hint = log.write_hint
    monkeypatch.setattr(log, "write_hint", lambda *a, **k: None)  # ... that vacuum fails to refresh
    before = _keys(client, "vacfail/t/")
    with pytest.raises(rcfmt.StorageError, match="hint .* could not be made to name version 6; nothing was deleted"):
        rcfmt.dataset(uri).vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert _keys(client, "vacfail/t/") == before
    monkeypatch.setattr(log, "write_hint", real_hint)
    real = vacuum_module.delete_files
    monkeypatch.setattr(vacuum_module, "delete_files", lambda paths: [p for p in paths if p == v1] or real(paths))
    with pytest.raises(rcfmt.StorageError, match=r"could not be deleted .*\(after 0 older ones were\).*left in place"):
        rcfmt.dataset(uri).vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert set(_keys(client, "vacfail/t/")) == set(before)  # (the hint was rewritten, in place)
    assert log.read_hint(uri)[0] == 6
    # a version after the first fails: the older ones are gone, the rest contiguous, every data file kept
    monkeypatch.setattr(vacuum_module, "delete_files", lambda paths: [p for p in paths if p == v3] or real(paths))
    with pytest.raises(rcfmt.StorageError, match=r"could not be deleted .*\(after 2 older ones were\)"):
        rcfmt.dataset(uri).vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert log.list_versions(uri) == [3, 4, 5, 6]
    assert rcfmt.dataset(uri).version == 6 and rcfmt.dataset(uri, version=3).count_rows() == 3
    monkeypatch.undo()
    removed = rcfmt.dataset(uri).vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert log.list_versions(uri) == [6] and {log.version_path(uri, v) for v in (3, 4, 5)} <= set(removed)
    assert sorted(rcfmt.dataset(uri).read()["x"].to_pylist()) == [1, 2, 3]


def test_deleting_what_is_gone_already_is_no_failure(s3, tmp_path):
    from rcfmt.storage import delete_files

    _, client = s3
    client.put_object(Bucket=BUCKET, Key="gone/there.rcfmt", Body=b"x")
    (tmp_path / "here").write_bytes(b"x")
    paths = [f"s3://{BUCKET}/gone/there.rcfmt", f"s3://{BUCKET}/gone/never.rcfmt", str(tmp_path / "here"),
             str(tmp_path / "never")]
    assert delete_files(paths) == []
    assert _keys(client, "gone/") == [] and not (tmp_path / "here").exists()


def test_a_data_file_whose_read_back_fails_is_deleted(s3, monkeypatch):
    """The write of a data file succeeds, then reading it back for its index entry fails:
    the append raises and leaves no object behind (abort() did not see that file)."""
    from rcfmt.dataset import files as files_module

    _, client = s3
    uri = f"s3://{BUCKET}/readback/t"
    rcfmt.write_dataset(pa.table({"x": [1, 2]}), uri)
    before = _keys(client, "readback/t/")

    def unavailable(*a, **k):
        raise rcfmt.StorageError("Service Unavailable")

    monkeypatch.setattr(files_module, "entry_from_file", unavailable)
    with pytest.raises(rcfmt.StorageError, match="Service Unavailable"):
        rcfmt.write_dataset(pa.table({"x": [3]}), uri)
    assert _keys(client, "readback/t/") == before


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([("id", "ascending")])


def test_datasets_are_written_appended_and_overwritten_on_s3(s3, tmp_path):
    """write_dataset to an s3:// URI: partitioned data files straight to their keys, the
    version committed by a conditional PUT; appends add versions, an overwrite replaces
    the files; filters prune as locally; nothing is staged or left over."""
    _, client = s3
    t = _table().append_column("p", pa.array(np.arange(ROWS) % 3))
    uri = f"s3://{BUCKET}/dsw/t"
    ds = rcfmt.write_dataset(t.slice(0, 12_000), uri, partition_by="p", target_file_rows=5000)
    assert ds.version == 1
    ds = rcfmt.write_dataset(t.slice(12_000), uri)
    assert ds.version == 2 and ds.num_rows == ROWS
    got = rcfmt.dataset(uri).to_table()
    assert _sorted(got).equals(_sorted(t.select(got.column_names)))
    expr = (rcfmt.col("id") >= 100) & (rcfmt.col("id") < 130) & (rcfmt.col("p") == 1)
    scan = rcfmt.dataset(uri).scan(filter=expr)
    assert sorted(scan.read().column("id").to_pylist()) == [i for i in range(100, 130) if i % 3 == 1]
    assert scan.stats.files_pruned > 0
    keys = _keys(client, "dsw/t/")
    assert [k for k in keys if "_rcfmt/" in k] == ["dsw/t/_rcfmt/_last_version",  # the version hint
                                                  "dsw/t/_rcfmt/v00000000000000000001.rcfmt",
                                                  "dsw/t/_rcfmt/v00000000000000000002.rcfmt"]
    assert all(k.startswith("dsw/t/p=") or "_rcfmt/v" in k or k == "dsw/t/_rcfmt/_last_version"
               for k in keys)  # no staging, no temporaries
    ds = rcfmt.write_dataset(t.slice(0, 10), uri, mode="overwrite")
    assert ds.version == 3 and _sorted(rcfmt.dataset(uri).to_table()).equals(_sorted(t.slice(0, 10)))
    assert rcfmt.dataset(uri, version=2).num_rows == ROWS


def test_a_dataset_on_s3_renames_a_column_and_reads_every_file_by_it(s3):
    """``evolve(rename=...)`` on an s3:// dataset commits by a conditional PUT like every
    version; files written before and after are read, filtered and pruned by the new
    name, and optimize rewrites them in it."""
    t = _table().append_column("p", pa.array(np.arange(ROWS) % 3))
    uri = f"s3://{BUCKET}/dsr/t"
    rcfmt.write_dataset(t.slice(0, 10_000), uri, partition_by="p", target_file_rows=5000)
    ds = rcfmt.dataset(uri).evolve(rename={"x": "score"})
    assert ds.schema.names == ["id", "score", "s", "p"] and ds.column_ids["score"] == ds.column_ids["x"]
    rcfmt.write_dataset(t.slice(10_000).rename_columns(["id", "score", "s", "p"]), uri)
    ds = rcfmt.dataset(uri)
    want = t.rename_columns(["id", "score", "s", "p"])
    assert _sorted(ds.to_table()).equals(_sorted(want.select(ds.schema.names)))
    scan = ds.scan(columns=["id"], filter=(rcfmt.col("score") < 0.01) & (rcfmt.col("id") < 10_000))
    expected = [i for i, v in enumerate(t.column("x").to_pylist()) if v < 0.01 and i < 10_000]
    assert sorted(scan.read().column("id").to_pylist()) == expected
    assert scan.stats.files_pruned > 0  # the files written after hold ids from 10,000 on
    optimized = ds.optimize(target_file_rows=ROWS)
    assert _sorted(optimized.to_table()).equals(_sorted(want.select(ds.schema.names)))


def test_a_failed_dataset_write_leaves_no_object_and_no_version(s3):
    from store_commits import check_a_failed_write_leaves_nothing

    _, client = s3
    check_a_failed_write_leaves_nothing(f"s3://{BUCKET}/dsfail/t", _table(), lambda: _keys(client, "dsfail/"))


def test_a_lost_race_rebases_and_no_row_is_lost(s3, monkeypatch):
    from store_commits import check_a_lost_race_rebases_and_an_overwrite_conflicts

    _, client = s3
    check_a_lost_race_rebases_and_an_overwrite_conflicts(f"s3://{BUCKET}/race/t", _table(),
                                                         lambda: _keys(client, "race/"), monkeypatch)


def test_concurrent_appends_from_threads(s3):
    from store_commits import check_appends_from_threads_lose_no_row

    check_appends_from_threads_lose_no_row(f"s3://{BUCKET}/threads/t", _table(), pieces=8, threads=2)


def _keys(client, prefix: str) -> list[str]:
    """Object keys under ``prefix``, without the empty "directory" markers pyarrow's S3
    client leaves where it deleted the last object of a prefix."""
    contents = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return sorted(o["Key"] for o in contents if not (o["Key"].endswith("/") and o["Size"] == 0))


def test_write_table_to_a_uri(s3):
    """A file written to an object-store URI reads back whole, and no temporary object
    is left beside it; writing again replaces it."""
    _, client = s3
    t = _table()
    uri = f"s3://{BUCKET}/written/f.rcfmt"
    rcfmt.write_table(t, uri, block_rows=4096)
    assert _keys(client, "written/") == ["written/f.rcfmt"]
    assert rcfmt.read_table(uri).equals(t)
    with rcfmt.open(uri) as f:
        assert f.num_blocks == 5
    rcfmt.write_table(t.slice(0, 10), uri)
    assert rcfmt.read_table(uri).equals(t.slice(0, 10)) and _keys(client, "written/") == ["written/f.rcfmt"]


def test_streaming_writer_with_a_filesystem_object(s3):
    import pyarrow.fs as pafs

    endpoint, client = s3
    fs = pafs.S3FileSystem(endpoint_override=endpoint.removeprefix("http://"), scheme="http", region="us-east-1",
                           access_key="testing", secret_key="testing")
    t = _table()
    with rcfmt.Writer(f"{BUCKET}/streamed/f.rcfmt", t.schema, filesystem=fs, block_rows=5000) as w:
        for batch in t.to_batches(max_chunksize=3000):
            w.write(batch)
        assert _keys(client, "streamed/f.rcfmt") == []  # nothing at the target before close
    assert rcfmt.read_table(f"{BUCKET}/streamed/f.rcfmt", filesystem=fs).equals(t)
    assert _keys(client, "streamed/") == ["streamed/f.rcfmt"]


def test_a_failed_remote_write_leaves_nothing(s3):
    """A write that fails half way (a batch of the wrong schema after a block went out)
    leaves neither the target nor a temporary object, and an existing target untouched."""
    _, client = s3
    t = _table()
    uri = f"s3://{BUCKET}/failed/f.rcfmt"
    with pytest.raises(rcfmt.SchemaError):
        with rcfmt.Writer(uri, t.schema, block_rows=4096) as w:
            w.write(t)
            w.write(pa.table({"other": [1]}))
    assert _keys(client, "failed/") == []
    rcfmt.write_table(t.slice(0, 5), uri)
    with pytest.raises(rcfmt.SchemaError):
        with rcfmt.Writer(uri, t.schema) as w:
            w.write(t)
            w.write(pa.table({"other": [1]}))
    assert rcfmt.read_table(uri).equals(t.slice(0, 5)) and _keys(client, "failed/") == ["failed/f.rcfmt"]


def test_remote_write_errors(s3):
    _, client = s3
    client.put_object(Bucket=BUCKET, Key="adir/x", Body=b"x")
    with pytest.raises(DirectoryError, match="is a directory; name a file"):  # before anything is written
        rcfmt.write_table(_table(), f"s3://{BUCKET}/adir")
    with pytest.raises(UnsupportedError):
        rcfmt.write_table(_table(), "nosuchscheme://x/y.rcfmt")
    with pytest.raises(rcfmt.InvalidOptionError, match="filesystem must be"):
        rcfmt.write_table(_table(), "x.rcfmt", filesystem=object())
    assert _keys(client, "adir/") == ["adir/x"]


def test_fsspec_filesystem_write(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    t = _table()
    path = str(tmp_path / "via-fsspec.rcfmt")
    rcfmt.write_table(t, path, filesystem=fsspec.filesystem("file"))
    assert rcfmt.read_table(path).equals(t) and sorted(os.listdir(tmp_path)) == ["via-fsspec.rcfmt"]


def test_cli_inspects_an_object(remote_file):
    import subprocess
    import sys

    uri, _, _ = remote_file
    proc = subprocess.run([sys.executable, "-m", "rcfmt.cli", "inspect", uri], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert str(ROWS) in proc.stdout.replace(",", "")


def test_cli_inspects_a_remote_dataset(remote_dataset):
    import subprocess
    import sys

    uri, _, _ = remote_dataset
    proc = subprocess.run([sys.executable, "-m", "rcfmt.cli", "inspect", uri], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.replace(",", "")
    assert f"dataset: {uri}" in out and "version: 2" in out and f"rows:    {ROWS}" in out and "partitioned by: p" in out
    missing = subprocess.run([sys.executable, "-m", "rcfmt.cli", "inspect", f"s3://{BUCKET}/no/such"],
                             capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert missing.returncode == 1 and "rcfmt: error:" in missing.stderr


# ---------------------------------------------------------------- datasets
def _upload_tree(client, local_root, prefix: str) -> None:
    for dirpath, _, filenames in os.walk(local_root):
        for name in filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, local_root).replace(os.sep, "/")
            with open(path, "rb") as fh:
                client.put_object(Bucket=BUCKET, Key=f"{prefix}/{rel}", Body=fh.read())


@pytest.fixture(scope="module")
def remote_dataset(s3, tmp_path_factory):
    """``(uri, local root, table)``: a partitioned dataset with two versions, uploaded."""
    _, client = s3
    table = _table().append_column("p", pa.array(np.arange(ROWS) % 3, pa.int32()))
    root = tmp_path_factory.mktemp("s3ds") / "ds"
    rcfmt.write_dataset(table.slice(0, 12_000), root, partition_by=["p"], block_rows=2048)
    rcfmt.write_dataset(table.slice(12_000), root, partition_by=["p"], block_rows=2048)  # version 2
    _upload_tree(client, root, "ds")
    return f"s3://{BUCKET}/ds", root, table


def test_dataset_reads_with_filters_and_versions(remote_dataset):
    uri, root, table = remote_dataset
    ds = rcfmt.dataset(uri)
    local = rcfmt.dataset(root)
    assert ds.version == local.version == 2 and ds.num_rows == ROWS and ds.num_files == local.num_files
    f = (rcfmt.col("p") == 1) & (rcfmt.col("id") >= 9000) & (rcfmt.col("id") < 15000)
    got = ds.to_table(filter=f, columns=["id", "x"]).sort_by("id")
    assert got.equals(local.to_table(filter=f, columns=["id", "x"]).sort_by("id")) and got.num_rows == 2000
    assert rcfmt.dataset(uri, version=1).num_rows == 12_000
    assert rcfmt.dataset(uri + "/").num_rows == ROWS
    pruned = ds.prune(rcfmt.col("id") < 100)
    assert 0 < int(pruned.sum()) < ds.num_files  # pruned from the index alone


def test_dataset_take_and_row_positions_on_s3(remote_dataset):
    uri, root, _ = remote_dataset
    for version in (1, 2):
        ds, local = rcfmt.dataset(uri, version=version), rcfmt.dataset(root, version=version)
        positions = np.random.default_rng(version).integers(0, ds.num_rows, 200)
        assert ds.take(positions).equals(local.take(positions))
        f = rcfmt.col("x") < 0.01
        hits = ds.read(filter=f, with_row_position=True)
        assert hits.equals(local.read(filter=f, with_row_position=True)) and hits.num_rows
        assert ds.take(hits.column("_row_position")).equals(hits.drop_columns(["_row_position"]))


def test_dataset_errors(remote_dataset, s3):
    uri, _, _ = remote_dataset
    endpoint, client = s3
    with pytest.raises(FileNotFoundError):
        rcfmt.dataset(f"s3://{BUCKET}/nothing-here")
    client.put_object(Bucket=BUCKET, Key="plain/a.rcfmt", Body=b"x")
    with pytest.raises(UnsupportedError, match="no dataset index"):
        rcfmt.dataset(f"s3://{BUCKET}/plain")
    with pytest.raises(rcfmt.InvalidOptionError, match="no version 7"):
        rcfmt.dataset(uri, version=7)
    # a query (pyarrow's options) cannot follow the paths below a dataset's root: refused
    # by name, before any request, for opens, vacuum and writes
    query = f"{uri}?endpoint_override={endpoint.split('//')[1]}&scheme=http"
    for call in (lambda: rcfmt.dataset(query), lambda: rcfmt.dataset(query, version=1),
                 lambda: rcfmt.dataset.vacuum(query, dry_run=True),
                 lambda: rcfmt.write_dataset(pa.table({"id": [1]}), query, mode="append"),
                 lambda: rcfmt.dataset.commit(query, [], mode="append", read_version=2, data_schema=pa.schema(
                     [("id", pa.int64())]), partitioning=rcfmt.dataset.Partitioning.from_schema(
                     pa.schema([("id", pa.int64())]), []), txn_id="t")):
        with pytest.raises(UnsupportedError, match="options in a dataset's URI"):
            call()
    assert rcfmt.dataset(uri).version == 2
    one = next(f.path for f in rcfmt.dataset(uri).get_fragments())
    client.delete_object(Bucket=BUCKET, Key=one.removeprefix(f"s3://{BUCKET}/"))
    from rcfmt.file.footer_cache import FOOTERS

    FOOTERS.clear()  # (a small file read before is cached whole: its rows would still be served)
    with pytest.raises(rcfmt.CorruptFileError, match="missing"):
        rcfmt.dataset(uri).to_table()


# ------------------------------------------------------------------ faults
@pytest.fixture
def proxy(s3, monkeypatch):
    """An S3Proxy in front of the server, and the environment pointing clients at it."""
    from local_s3 import S3Proxy

    endpoint, _ = s3
    with S3Proxy(endpoint) as p:
        monkeypatch.setenv("AWS_ENDPOINT_URL", p.endpoint)
        yield p


def _faulty(kind, key: str, times: int):
    """A fault hook: ``kind`` for the first ``times`` GETs of ``key``."""
    left = {"n": times}

    def hook(number, method, path):
        if method == "GET" and key in path and left["n"] > 0:
            left["n"] -= 1
            return kind
        return None

    return hook


@pytest.mark.parametrize("kind", ["503", "reset"])
def test_a_transient_fault_is_retried(remote_file, proxy, large_file_reads, kind):
    """One throttling answer or one reset connection during a scan: the client retries
    (a bounded number of times) and the rows are right."""
    uri, _, table = remote_file
    with rcfmt.open(uri) as f:
        proxy.reset_counts()
        proxy.fault = _faulty(kind, "data/f.rcfmt", 1)
        got = f.scan(filter=rcfmt.col("id") >= 15_000).read()
    assert got.equals(table.slice(15_000))
    statuses = [r[2] for r in proxy.requests if "data/f.rcfmt" in r[1] and r[0] == "GET"]
    failed = [s for s in statuses if s not in (200, 206)]
    assert failed == [503 if kind == "503" else 0] and len(statuses) >= 2  # the fault, then its retry


def test_a_ranged_read_answered_with_more_bytes_is_a_storage_error(remote_file, large_file_reads, monkeypatch):
    """A server (or proxy) that ignores a read's Range and answers with the whole object:
    a StorageError naming the object and the range, never a raw ValueError from copying
    the answer into the read's buffer, nor bytes taken for others."""
    from rcfmt.storage import s3 as s3_store

    uri, _, _ = remote_file
    real = s3_store._get_object

    def ignoring_ranges(client, bucket, key, what, **kwargs):
        if kwargs.get("Range", "").startswith("bytes=-"):  # (the open's suffix read is answered right)
            return real(client, bucket, key, what, **kwargs)
        kwargs.pop("Range", None)
        return real(client, bucket, key, what, **kwargs)

    monkeypatch.setattr(s3_store, "_get_object", ignoring_ranges)
    for read in (lambda f: f.read(), lambda f: f.take([0, ROWS - 1]),
                 lambda f: f.scan(filter=rcfmt.col("id") == 15_000).read()):
        with rcfmt.open(uri) as f, pytest.raises(rcfmt.StorageError, match=r"data/f.rcfmt.*answered with \d+ bytes"):
            read(f)


class _Held:
    """A fault hook that holds the first ``times`` GETs of ``key`` unanswered (a server
    that stopped answering them) until :meth:`release`, then drops their connections;
    ``seen`` counts the GETs of ``key``, ``held`` those it held. (Only if nothing
    releases them for a minute -- a client that waits that long -- is the answer sent:
    a guard against a hang, not a measure of time.)"""

    def __init__(self, key: str, times: int):
        self.key, self.left, self.seen, self.held = key, times, 0, 0
        self._released = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, number, method, path):
        if method != "GET" or self.key not in path:
            return None
        with self._lock:
            self.seen += 1
            if self.left <= 0:
                return None
            self.left -= 1
            self.held += 1
        return "reset" if self._released.wait(60) else None

    def release(self) -> None:
        self._released.set()


def test_a_persistent_fault_is_a_storage_error_after_the_configured_attempts(remote_file, proxy, monkeypatch):
    """A server that keeps failing: a StorageError (an RcfmtError and an OSError) naming
    the object once the client has made its configured number of attempts
    (``rcfmt.storage.s3.ATTEMPTS``, 2 here) -- each of them answered 503, none more."""
    from rcfmt.storage import s3 as s3_store

    uri, _, _ = remote_file
    monkeypatch.setattr(s3_store, "ATTEMPTS", 2)
    proxy.fault = _faulty("503", "data/f.rcfmt", 1000)
    with pytest.raises(rcfmt.StorageError, match="data/f.rcfmt") as info:
        rcfmt.open(uri)
    assert isinstance(info.value, OSError) and isinstance(info.value, RcfmtError)
    attempts = [r[2] for r in proxy.requests if r[0] == "GET" and "data/f.rcfmt" in r[1]]
    assert attempts == [503, 503]


def test_a_stalled_read_times_out_and_is_retried(remote_file, proxy, s3, large_file_reads):
    """A read the server never answers: the client's request timeout (0.5 s here) gives
    it up and a retry reads the bytes -- a GET more than the same read without the stall
    (more only if a slow machine times out another), the stalled one still unanswered
    when the read returns, the rows right."""
    import pyarrow.fs as pafs

    uri, _, table = remote_file
    fs = pafs.S3FileSystem(endpoint_override=proxy.endpoint.removeprefix("http://"), scheme="http",
                           region="us-east-1", access_key="testing", secret_key="testing", request_timeout=0.5)
    with rcfmt.open(f"{BUCKET}/data/f.rcfmt", filesystem=fs) as f:
        proxy.fault = clean = _Held("data/f.rcfmt", 0)  # (counts only)
        want = f.read(columns=["id"])
        proxy.fault = stalled = _Held("data/f.rcfmt", 1)
        try:
            got = f.read(columns=["id"])
        finally:
            stalled.release()
    assert want.column("id").equals(table.column("id")) and got.equals(want)
    assert clean.seen >= 1 and stalled.held == 1 and stalled.seen >= clean.seen + 1


def test_a_write_whose_upload_keeps_failing_leaves_no_file(s3, proxy):
    _, client = s3

    def hook(number, method, path):
        return "503" if method in ("PUT", "POST") and "upfail/" in path else None

    proxy.fault = hook
    with pytest.raises(rcfmt.StorageError, match="upfail/f.rcfmt"):
        rcfmt.write_table(_table(), f"s3://{BUCKET}/upfail/f.rcfmt")
    proxy.fault = None
    assert _keys(client, "upfail/") == []


def test_a_scan_over_many_blocks_fetches_their_page_indexes_at_once(remote_file, server_log, large_file_reads,
                                                                    monkeypatch):
    """Every kept block needs its page index: on object storage they come in one request
    (coalesced). Then each block costs one request: its projected columns' pages that
    may hold matching rows ride along with the filter columns' while they hold at most
    FetchOptions.coalesce_gap; with nothing coalesced (``fewest_bytes``), a second
    request fetches the selected rows' pages. The bloom filters, which this small file
    keeps right before its footer, come with the open's tail read."""
    uri, local, _ = remote_file
    expr = (rcfmt.col("s") == "name-5") & (rcfmt.col("x") < 0.5)
    want = rcfmt.read_table(local, filter=expr)
    for gap, per_block in ((1 << 20, 1), (0, 2)):  # blocks read apart (grouping: the test below)
        with rcfmt.open(uri, fetch=rcfmt.FetchOptions(coalesce_gap=gap, tail_bytes=4096, max_request_bytes=0)) as f:
            assert f.footer.bloom_region[0] >= f.size - 4096  # inside the tail read
            server_log.lines.clear()
            scan = f.scan(filter=expr, use_threads=False)
            got = scan.read()
            blocks = scan.stats.blocks_total - scan.stats.blocks_pruned_stats - scan.stats.blocks_pruned_bloom
            assert blocks == 5
            assert scan.stats.requests == server_log.gets("data/f.rcfmt") == 1 + per_block * blocks
        assert got.equals(want) and got.num_rows > 0


def test_vacuum_on_s3(s3):
    """Vacuum removes old index versions and the data objects no remaining version
    references (an overwrite's predecessors, a crashed writer's orphan), keeps what the
    latest version reads, and ``dry_run`` only lists."""
    from rcfmt.dataset import vacuum

    _, client = s3
    uri = f"s3://{BUCKET}/vac/t"
    t = _table()
    rcfmt.write_dataset(t.slice(0, 5000), uri, target_file_rows=2000)
    rcfmt.write_dataset(t.slice(5000, 100), uri, mode="overwrite")
    client.put_object(Bucket=BUCKET, Key="vac/t/part-crashed-00000.rcfmt", Body=b"partial")
    client.put_object(Bucket=BUCKET, Key="vac/t/notes.txt", Body=b"not ours")
    assert vacuum(uri) == []  # everything is younger than the default retention
    # a killed writer's multipart upload, never completed (no object lists it) and one of
    # another prefix: vacuum aborts the first only (moto dates every upload in 2010)
    for key in ("vac/t/p=1/part-killed-00000.rcfmt", "vac/other/part-x-00000.rcfmt", "vac/t/_tmp/import.csv",
                "vac/t/notes/big.bin", "vac/t/_archive/part-0001.rcfmt"):  # (the last three: not a writer's)
        upload = client.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
        client.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=1, Body=b"x" * 1000)

    def uploads():
        return sorted(u["Key"] for u in client.list_multipart_uploads(Bucket=BUCKET, Prefix="vac/").get("Uploads", ()))

    before = _keys(client, "vac/")
    listed = vacuum(uri, retention_seconds=0, dry_run=True)
    assert _keys(client, "vac/") == before and len(uploads()) == 5
    removed = vacuum(uri, retention_seconds=0, enforce_retention_duration=False)
    assert sorted(removed) == sorted(listed) and f"{uri}/p=1/part-killed-00000.rcfmt" in removed
    assert uploads() == ["vac/other/part-x-00000.rcfmt", "vac/t/_archive/part-0001.rcfmt", "vac/t/_tmp/import.csv",
                         "vac/t/notes/big.bin"]
    assert f"{uri}/_rcfmt/v00000000000000000001.rcfmt" in removed and f"{uri}/part-crashed-00000.rcfmt" in removed
    assert len([r for r in removed if r.endswith(".rcfmt") and "/_rcfmt/" not in r]) == 3 + 1 + 1  # v1's, orphan, upload
    left = _keys(client, "vac/")
    assert "vac/t/notes.txt" in left and "vac/t/_rcfmt/v00000000000000000002.rcfmt" in left
    assert rcfmt.dataset(uri).to_table().equals(t.slice(5000, 100))


def test_optimize_on_s3_clusters_and_commits_and_a_failure_leaves_nothing(s3, monkeypatch):
    """optimize on an S3 dataset: the rewritten files go to their final keys and one
    conditional PUT commits them; the rows stay the same multiset, the old files leave
    the version (vacuum removes them), and a rewrite that fails midway deletes what it
    uploaded and commits nothing. Nothing is created on the local disk."""
    from rcfmt.dataset import optimize as optimize_module

    _, client = s3
    uri = f"s3://{BUCKET}/opt/t"
    rng = np.random.default_rng(8)
    n = 12_000
    t = pa.table({"a": rng.integers(0, 1000, n), "b": rng.integers(0, 1000, n), "v": rng.random(n)})
    for k in range(4):  # four appends: four small unclustered files
        rcfmt.write_dataset(t.slice(k * 3000, 3000), uri)
    before_keys = set(_keys(client, "opt/"))
    cwd_before = set(os.listdir("."))

    def boom(*args, **kwargs):
        raise RuntimeError("injected failure in the middle of the rewrite")

    real = optimize_module._rewrite_partition
    calls = {"n": 0}

    def fail_after_upload(*args, **kwargs):  # the partition's new files are uploaded, then it fails
        calls["n"] += 1
        real(*args, **kwargs)
        boom()

    monkeypatch.setattr(optimize_module, "_rewrite_partition", fail_after_upload)
    with pytest.raises(RuntimeError, match="injected"):
        rcfmt.dataset(uri).optimize(["a", "b"], target_file_rows=4000)
    monkeypatch.setattr(optimize_module, "_rewrite_partition", real)
    assert calls["n"] == 1 and set(_keys(client, "opt/")) == before_keys and rcfmt.dataset(uri).version == 4

    ds = rcfmt.dataset(uri).optimize(["a", "b"], target_file_rows=4000)
    assert ds.version == 5 and ds.num_files == 3 and ds.info.get("clustering", {}).get("columns") == ["a", "b"]
    got = ds.to_table().sort_by([("a", "ascending"), ("b", "ascending"), ("v", "ascending")])
    assert got.equals(t.sort_by([("a", "ascending"), ("b", "ascending"), ("v", "ascending")]))
    # clustered: the files' a-ranges barely overlap, so a point filter on a reads fewer files
    scan = ds.scan(filter=rcfmt.col("a") == 10)
    assert scan.read().num_rows == int(np.sum(t["a"].to_numpy() == 10)) and scan.stats.files_pruned >= 1
    assert set(os.listdir(".")) == cwd_before  # no local ./s3:/... directory
    from rcfmt.dataset import vacuum

    removed = vacuum(uri, retention_seconds=0, enforce_retention_duration=False)
    assert len([r for r in removed if "/_rcfmt/" not in r]) == 4  # the four files optimize replaced
    assert rcfmt.dataset(uri).to_table().num_rows == n


#: the preamble of the fresh-interpreter scripts: ``race(calls)`` runs the calls from one
#: thread each, released together, and returns their results (asserting none raised)
_RACE = r"""
import sys, threading
import rcfmt

def race(calls):
    barrier = threading.Barrier(len(calls))
    results, errors = [None] * len(calls), []

    def run(k):
        try:
            barrier.wait()
            results[k] = calls[k]()
        except BaseException as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(calls))]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors, errors
    return results
"""


def _run_fresh(script: str, *args) -> None:
    """Run ``_RACE + script`` in a new interpreter (this checkout importable); it must
    print a line starting with OK."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-c", _RACE + script, *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.startswith("OK"), proc.stderr[-3000:]


_FRESH_THREADED = r"""
uri, local = sys.argv[1], sys.argv[2]
exprs = [rcfmt.col("id").isin([10, 200_500, 399_000]), rcfmt.col("id") >= 390_000,
         (rcfmt.col("v") < 0.001), rcfmt.col("id") < 50]

def scan(expr):
    with rcfmt.open(uri) as f:  # first calls race: the fetch pool, the page-index prefetch
        return f.scan(filter=expr, use_threads=True).read()

results = race([lambda e=e: scan(e) for e in exprs])
for k, expr in enumerate(exprs):
    assert results[k].equals(rcfmt.read_table(local, filter=expr)), k
print("OK", [r.num_rows for r in results])
"""


def test_first_remote_scans_in_a_fresh_interpreter_race_safely(s3, tmp_path):
    """A user's first calls, at once from four threads in a new process: threaded scans of
    one S3 file create the concurrent-fetch pool and the page-index prefetch lazily, and
    every result equals the local file's."""
    n = 400_000
    t = pa.table({"id": np.arange(n), "v": np.random.default_rng(3).random(n)})
    local = tmp_path / "fresh.rcfmt"
    rcfmt.write_table(t, local, block_rows=50_000, page_rows=1000, compression="none")
    uri = f"s3://{BUCKET}/fresh/f.rcfmt"
    rcfmt.write_table(t, uri, block_rows=50_000, page_rows=1000, compression="none")
    _run_fresh(_FRESH_THREADED, uri, local)


# ------------------------------------------------------------------ what an open reads, and the footer cache
def test_a_small_file_is_read_whole_at_its_open(remote_file, server_log):
    """A file up to 1 MiB costs one GET at its open (a request costs as much as ~1 MB
    of transfer): every later read is served from those bytes."""
    uri, local, _ = remote_file
    expr = (rcfmt.col("id") >= 5000) & (rcfmt.col("s") == "name-7")
    with rcfmt.open(uri) as f:
        assert f.size < 1 << 20 and f.requests == 1 and f.bytes_read == f.size
        scan = f.scan(filter=expr)
        got = scan.read()
        assert scan.stats.requests == 0 and f.requests == 1
        assert f.read(columns=["x"]).num_rows == ROWS and f.requests == 1
    assert server_log.gets("data/f.rcfmt") == 1 and server_log.heads("data/f.rcfmt") == 0
    assert got.equals(rcfmt.read_table(local, filter=expr)) and got.num_rows > 0


@pytest.fixture(scope="module")
def large_remote_file(s3, tmp_path_factory):
    """``(uri, local path, table)``: a ~2.6 MB file of 10 blocks, uploaded."""
    _, client = s3
    n = 320_000
    rng = np.random.default_rng(11)
    table = pa.table({"k": np.arange(n), "v": rng.random(n)})
    local = tmp_path_factory.mktemp("s3big") / "big.rcfmt"
    rcfmt.write_table(table, local, block_rows=32_768, page_rows=4096, compression="none")
    client.put_object(Bucket=BUCKET, Key="data/big.rcfmt", Body=local.read_bytes())
    return f"s3://{BUCKET}/data/big.rcfmt", local, table


def test_a_large_file_open_reads_a_tail_and_a_point_lookup_costs_four_requests(large_remote_file, server_log):
    """Past 1 MiB an open reads the tail, which holds the footer, with the size in the
    same request (a suffix range): as the size is not known before, the most the
    policy's tail can be (1 MiB; 1/128 of the file, 64 KiB to 1 MiB, when the size is
    known). A point lookup then costs at most the block's page index and its pages:
    three requests in all."""
    uri, local, table = large_remote_file
    with rcfmt.open(uri) as f:
        assert f.size > 2 << 20 and f.requests == 1
        assert f.bytes_read == rcfmt.FetchOptions().open_tail() == 1 << 20
        scan = f.scan(filter=rcfmt.col("k") == 123_456)
        got = scan.read()
        assert scan.stats.blocks_pruned_stats == f.num_blocks - 1
    assert got.equals(table.slice(123_456, 1))
    key = "data/big.rcfmt"
    assert server_log.heads(key) == 0 and server_log.gets(key) <= 3, (server_log.heads(key), server_log.gets(key))


@pytest.fixture(scope="module")
def wide_remote_file(s3, tmp_path_factory):
    """``(uri, table)``: ~20 MB, 12 columns, blocks of 65,536 rows in pages of 4,096
    (each column chunk 512 KiB: a point lookup's pages lie that far apart), uploaded."""
    _, client = s3
    n = 200_000
    rng = np.random.default_rng(12)
    table = pa.table({"k": np.arange(n), **{f"c{i}": rng.random(n) for i in range(11)}})
    local = tmp_path_factory.mktemp("s3wide") / "wide.rcfmt"
    rcfmt.write_table(table, local, block_rows=65_536, page_rows=4096, compression="none", bloom_filter_columns=None,
                      bitmap_indexes=None)
    client.put_object(Bucket=BUCKET, Key="data/wide.rcfmt", Body=local.read_bytes())
    return f"s3://{BUCKET}/data/wide.rcfmt", table


def test_fetch_options_trade_requests_for_bytes(wide_remote_file, proxy):
    """By default a point lookup reads the pages of its 12 columns with one request that
    carries the gaps between them (4 requests with the HEAD); ``fewest_bytes`` reads each
    range apart and a 64 KiB tail: more requests, >= 10x fewer bytes. Both count what
    the server sent (ScanStats agrees with the proxy), and both find the row."""
    uri, table = wide_remote_file
    key = "data/wide.rcfmt"
    expr = rcfmt.col("k") == 123_456
    moved = {}
    for name, fetch in (("default", None), ("fewest", rcfmt.FetchOptions.fewest_bytes())):
        proxy.reset_counts()
        with rcfmt.open(uri, fetch=fetch) as f:
            scan = f.scan(filter=expr)
            got = scan.read()
            assert f.bytes_read == proxy.counts(key)[1]
        assert got.equals(table.slice(123_456, 1))
        moved[name] = proxy.counts(key)
    (requests, nbytes), (lean_requests, lean_bytes) = moved["default"], moved["fewest"]
    assert requests <= 4 and nbytes > 4 << 20  # the gaps between the 12 pages (~0.5 MiB each) ride along
    assert lean_bytes * 10 <= nbytes and lean_bytes < 64 * 1024 + 12 * 40_000 + 8192, moved
    assert requests < lean_requests <= 2 + 1 + 12  # HEAD, tail; page indexes; a page per column at most
    proxy.reset_counts()  # a dataset scan takes them too
    FetchOptions = rcfmt.FetchOptions
    with rcfmt.open(uri, fetch=FetchOptions(tail_bytes=64)) as f:  # a footer past a short tail: the rest
        assert f.requests == 2 and f.bytes_read == f._footer_length + 16
        assert f.read(["k"], expr)["k"].to_pylist() == [123_456]


def test_an_unfiltered_remote_read_groups_its_blocks(wide_remote_file, proxy):
    """``read_table(uri)`` and ``iter_batches`` without a filter read through the scan's
    fetch plan: the 4 blocks of 12 columns in one request of at most
    ``max_request_bytes`` each, not one request per column chunk (48)."""
    uri, table = wide_remote_file
    key = "data/wide.rcfmt"
    assert rcfmt.read_table(uri).equals(table)
    requests, nbytes = proxy.counts(key)
    assert requests <= 3 and nbytes < 1.1 * table.nbytes, (requests, nbytes)  # HEAD, tail, the blocks
    proxy.reset_counts()
    with rcfmt.open(uri, fetch=rcfmt.FetchOptions(max_request_bytes=8 << 20)) as f:
        got = pa.Table.from_batches(list(f.iter_batches(50_000)))
    assert got.equals(table) and proxy.counts(key)[0] <= 2 + 4, proxy.counts(key)


def test_a_dataset_scan_takes_fetch_options(s3, proxy, monkeypatch):
    """``Dataset.read(fetch=)`` reaches every file the scan opens: the tails they read
    and the gaps their requests carry; so do ``scan_fragments`` (Spark's workers),
    ``read_pandas`` (which reads a dataset on S3 too) and Polars' ``scan_rcfmt``."""
    from rcfmt.dataset import scan_fragments
    from rcfmt.file.footer_cache import FOOTERS

    uri = f"s3://{BUCKET}/fetchopts/ds"
    n = 120_000
    t = pa.table({"k": np.arange(n), **{f"c{i}": np.random.default_rng(i).random(n) for i in range(6)}})
    _write_through(s3, monkeypatch, lambda: rcfmt.write_dataset(t, uri, target_file_rows=40_000, block_rows=20_000,
                                                                page_rows=2048, compression="none"))
    expr = rcfmt.col("k") == 77_777
    moved = []
    lean = rcfmt.FetchOptions.fewest_bytes()
    polars = pytest.importorskip("polars")
    from rcfmt.polars import scan_rcfmt

    for read in (lambda ds: ds.read(filter=expr), lambda ds: ds.read(filter=expr, fetch=lean),
                 lambda ds: scan_fragments(ds.get_fragments(expr), ds.schema, None, expr, fetch=lean).read(),
                 lambda ds: rcfmt.read_pandas(uri, filter=expr, fetch=lean),
                 lambda ds: scan_rcfmt(uri, fetch=lean).filter(polars.col("k") == 77_777).collect()):
        FOOTERS.clear()
        ds = rcfmt.dataset(uri)
        proxy.reset_counts()
        got = read(ds)["k"]
        assert (got.to_pylist() if hasattr(got, "to_pylist") else list(got)) == [77_777]
        moved.append(sum(n for method, path, _, n in proxy.requests if "part-" in path))
    assert moved[1] * 3 < moved[0] and moved[1] == moved[2] == moved[3] == moved[4], moved


def _write_through(s3, monkeypatch, fn):
    """Run ``fn`` with clients pointed at the server itself (the counting proxy relays
    reads; writes go around it)."""
    endpoint, _ = s3
    saved = os.environ["AWS_ENDPOINT_URL"]
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    try:
        return fn()
    finally:
        monkeypatch.setenv("AWS_ENDPOINT_URL", saved)


def test_repeated_dataset_queries_take_footers_and_index_from_the_cache(s3, proxy, monkeypatch):
    """A dataset's index versions and data files are never replaced under their names,
    so their footers (and the tails read with them) are cached per (path, size): the
    first query costs finding the latest version and one GET per file (their sizes are in
    the index: no HEAD); a repeated one (a new Dataset object) only finding the latest
    version: a GET of the version hint and a HEAD showing that no later version exists
    (no listing, whatever the number of versions). A new version is seen at once: its
    index is a new name."""
    from rcfmt.file.footer_cache import FOOTERS

    uri = f"s3://{BUCKET}/cached/ds"
    t = _table().append_column("p", pa.array(np.arange(ROWS) % 3, pa.int32()))
    _write_through(s3, monkeypatch, lambda: rcfmt.write_dataset(t, uri, partition_by=["p"], block_rows=4096))
    FOOTERS.clear()
    expr = (rcfmt.col("id") >= 1000) & (rcfmt.col("id") < 1100)
    want = t.filter((pc.field("id") >= 1000) & (pc.field("id") < 1100)).sort_by("id")
    proxy.reset_counts()
    first = rcfmt.dataset(uri).to_table(filter=expr).sort_by("id")
    files = [r for r in proxy.requests if r[1].endswith(".rcfmt") and "_rcfmt" not in r[1]]
    assert [r[0] for r in files] == ["GET"] * 3, files
    proxy.reset_counts()
    again = rcfmt.dataset(uri).to_table(filter=expr).sort_by("id")
    assert [(r[0], r[1].rsplit("/", 1)[-1]) for r in proxy.requests] == [
        ("GET", "_last_version"), ("HEAD", "v00000000000000000002.rcfmt")], proxy.requests  # the hint, confirmed
    assert first.equals(again) and first.select(t.schema.names).equals(want)
    _write_through(s3, monkeypatch, lambda: rcfmt.write_dataset(t.slice(0, 10), uri, partition_by=["p"]))
    assert rcfmt.dataset(uri).to_table(filter=expr).num_rows == 100  # the appended ids 0..9 are not in range
    assert rcfmt.dataset(uri).num_rows == ROWS + 10


def test_an_s3_object_replaced_while_read_is_an_error_not_a_mix(s3, server_log):
    """Reads after the open are pinned to the ETag its GET carried (If-Match): after
    the object is replaced, the next read that goes to the server fails instead of
    returning the new bytes. An empty object is no rcfmt file; a short one is read
    whole by the open's suffix range."""
    from store_commits import check_a_file_replaced_while_read_is_an_error

    _, client = s3
    check_a_file_replaced_while_read_is_an_error(f"s3://{BUCKET}/pinned/f.rcfmt", "replaced while it was read")
    t = _table()
    client.put_object(Bucket=BUCKET, Key="pinned/empty.rcfmt", Body=b"")
    with pytest.raises(rcfmt.CorruptFileError, match="too short"):
        rcfmt.open(f"s3://{BUCKET}/pinned/empty.rcfmt")
    server_log.lines.clear()
    rcfmt.write_table(t.slice(0, 10), f"s3://{BUCKET}/pinned/small.rcfmt")
    server_log.lines.clear()
    with rcfmt.open(f"s3://{BUCKET}/pinned/small.rcfmt") as f:  # shorter than the suffix asked for
        assert f.read().equals(t.slice(0, 10)) and f.requests == 1 and f.bytes_read == f.size
    assert server_log.gets("pinned/small.rcfmt") == 1


def test_s3_reads_fall_back_to_pyarrow_without_boto3(remote_file, server_log, monkeypatch):
    """Without boto3 (reads need only pyarrow) the open is pyarrow's: its HEAD and the tail."""
    uri, local, table = remote_file
    monkeypatch.setitem(sys.modules, "boto3", None)  # (as where it is not installed: it cannot be imported)
    with rcfmt.open(uri) as f:
        assert type(f._source).__name__ == "ArrowFile"
        assert f.read(filter=rcfmt.col("id") == 7)["id"].to_pylist() == [7]
    assert server_log.heads("data/f.rcfmt") == 1


def test_a_data_file_deleted_after_its_footer_was_cached_is_reported_missing(s3, tmp_path):
    """The cache holds footers and tails, not whole large files: a data file removed
    behind the index's back is a CorruptFileError at its first read past the tail."""
    from rcfmt.file.footer_cache import FOOTERS

    _, client = s3
    uri = f"s3://{BUCKET}/gone/ds"
    n = 300_000
    big = pa.table({"k": np.arange(n), "v": np.random.default_rng(3).random(n)})
    rcfmt.write_dataset(big, uri, block_rows=32_768, compression="none")
    FOOTERS.clear()
    ds = rcfmt.dataset(uri)
    assert ds.count_rows(rcfmt.col("k") < 10) == 10
    (frag,) = ds.get_fragments()
    assert frag.size > 2 << 20
    client.delete_object(Bucket=BUCKET, Key=frag.path.removeprefix(f"s3://{BUCKET}/"))
    with pytest.raises(rcfmt.CorruptFileError, match="missing"):
        rcfmt.dataset(uri).to_table(filter=rcfmt.col("k") == n // 2)  # a block far from the tail


def test_a_remote_point_lookup_prunes_by_page_index_before_asking_bloom_filters(s3, tmp_path, server_log):
    """On object storage the page indexes of the blocks statistics keep come in one
    request (the scan needs them anyway) and prune first; bloom filters, a request of
    their own, are asked only when more than one block is left. Here statistics and
    bloom filters keep every block (each holds a == 100 and b == 100), but only in one
    block do both lie in the same page: the lookup costs the tail, the page indexes and
    one read of that block's pages -- no bloom request: three requests. (Locally the
    bloom filters are asked first, and keep every block.)"""
    _, client = s3
    n, block_rows = 300_000, 30_000
    within = np.arange(n, dtype=np.int64) % block_rows
    a = within.copy()
    b = block_rows - 1 - within  # b == 100 at the end of each block, a == 100 at its start ...
    b[4 * block_rows : 5 * block_rows] = within[:block_rows]  # ... except in block 4
    table = pa.table({"a": a, "b": b, "v": np.random.default_rng(2).random(n)})
    local = tmp_path / "lookup.rcfmt"
    rcfmt.write_table(table, local, block_rows=block_rows, page_rows=2000, compression="none",
                      bloom_filter_columns=["a", "b"])
    client.put_object(Bucket=BUCKET, Key="data/lookup.rcfmt", Body=local.read_bytes())
    expr = (rcfmt.col("a") == 100) & (rcfmt.col("b") == 100)
    with rcfmt.open(local) as f:
        assert f.size > 2 << 20 and f.footer.page_index_region[0] < f.size - 64 * 1024
        scan = f.scan(filter=expr)
        want = scan.read()
        assert (scan.stats.blocks_pruned_stats, scan.stats.blocks_pruned_bloom) == (0, 0)
        assert scan.stats.blocks_pruned_pages == f.num_blocks - 1
    assert want.num_rows == 1 and want["v"].to_pylist() == table["v"].to_pylist()[4 * block_rows + 100 : 4 * block_rows + 101]
    server_log.lines.clear()
    with rcfmt.open(f"s3://{BUCKET}/data/lookup.rcfmt") as f:
        scan = f.scan(filter=expr)
        got = scan.read()
    assert got.equals(want)
    assert (scan.stats.blocks_pruned_bloom, scan.stats.blocks_pruned_pages) == (0, f.num_blocks - 1)
    assert server_log.heads("data/lookup.rcfmt") == 0 and server_log.gets("data/lookup.rcfmt") == 3


def test_blocks_needing_most_of_their_bytes_are_read_together(remote_file, server_log, large_file_reads):
    """A remote scan plans its reads before decoding: consecutive blocks that need one
    span of bytes each (a full read; a filter the page index cannot narrow) are read
    with one request per group, instead of one or two per block. The rows are the
    local file's, for filters that narrow nothing, some pages, or everything."""
    uri, local, _ = remote_file
    exprs = [None, rcfmt.col("x") < 0.9, (rcfmt.col("s") == "name-5") & (rcfmt.col("x") < 0.5),
             rcfmt.col("id").between(3000, 3100) | (rcfmt.col("id") > 19_990), rcfmt.col("id") > 10**9,
             rcfmt.col("s").isin(["name-1", "name-96"]) & ~(rcfmt.col("id") < 7000)]
    with rcfmt.open(uri) as f:
        for expr in exprs:
            for columns in (None, ["x"], ["s", "id"]):
                got = f.scan(columns=columns, filter=expr).read()
                assert got.equals(rcfmt.read_table(local, columns=columns, filter=expr)), (expr, columns)
        server_log.lines.clear()
        scan = f.scan()  # every block whole: one group
        scan.read()
        assert scan.stats.requests == server_log.gets("data/f.rcfmt") == 1
        server_log.lines.clear()
        scan = f.scan(filter=rcfmt.col("x") < 0.9)  # page indexes, then every page of every block
        scan.read()
        assert scan.stats.blocks_total == 5 and scan.stats.requests == server_log.gets("data/f.rcfmt") == 2


# ------------------------------------------------------------------ soundness of remote pruning and fetching
from hypothesis import HealthCheck, given, settings  # noqa: E402

from scan.test_scan_soundness import _matches, assert_same, cases  # noqa: E402
from strategies import examples  # noqa: E402


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(case=cases())
def test_remote_scans_keep_every_match(s3, tmp_path_factory, monkeypatch, case):
    """What a remote scan does differently -- page indexes pruning before bloom filters,
    blocks read together by the fetch plan, projected pages riding along, reads served
    from the tail -- against the brute-force filter of the same random data (all types,
    NULLs, NaN, -0.0, tiny pages and blocks, random predicate trees). Once with the tail
    read cut to 64 bytes, so that every read goes to the server; once with the file
    read whole at the open, nothing coalesced and no ride-along; once with odd gaps and
    request bounds (ranges 100 bytes apart merged, groups of at most 300 bytes)."""
    table, expr, options = case
    _, client = s3
    local = tmp_path_factory.mktemp("remote-sound") / "t.rcfmt"
    rcfmt.write_table(table, local, **options)
    key = f"sound/{local.parent.name}.rcfmt"
    client.put_object(Bucket=BUCKET, Key=key, Body=local.read_bytes())
    expected = table.filter(pa.array(_matches(table, expr)))
    for fetch in (rcfmt.FetchOptions(tail_bytes=64), rcfmt.FetchOptions(tail_bytes=1 << 20, coalesce_gap=0),
                  rcfmt.FetchOptions(tail_bytes=100, coalesce_gap=100, max_request_bytes=300)):
        with rcfmt.open(f"s3://{BUCKET}/{key}", fetch=fetch) as f:  # (a footer past a short tail: one more read)
            got = f.scan(filter=expr).read()
        assert_same(got, expected)


def test_the_footer_cache_tells_stores_apart(s3, proxy, monkeypatch):
    """The cache key holds the store (filesystem kind and endpoint) besides path and
    size: the same bucket and key behind another endpoint is another object."""
    from rcfmt.file.footer_cache import FOOTERS
    from rcfmt.storage import s3_settings
    from rcfmt.storage.arrow_fs import store_identity
    from rcfmt.storage.registry import from_uri

    endpoint, _ = s3
    uri = f"s3://{BUCKET}/stores/ds"
    _write_through(s3, monkeypatch, lambda: rcfmt.write_dataset(_table(), uri))
    FOOTERS.clear()
    assert rcfmt.dataset(uri).to_table().num_rows == ROWS  # through the proxy (the environment's endpoint)
    through_proxy = len(FOOTERS)  # the index and the data file
    with s3_settings({"endpoint": endpoint}):  # the server itself: the same objects, another store
        assert rcfmt.dataset(uri).to_table().num_rows == ROWS
    assert through_proxy == 2 and len(FOOTERS) == 2 * through_proxy
    a = store_identity(from_uri(uri)[0])
    with s3_settings({"endpoint": endpoint}):
        b = store_identity(from_uri(uri)[0])
    assert a != b and a[0] == b[0] == "s3"


_FRESH_DATASET = r"""
from rcfmt.file.footer_cache import FOOTERS
uri, local = sys.argv[1], sys.argv[2]
exprs = [rcfmt.col("id") < 5000, rcfmt.col("id").isin([7, 123_456, 299_999]), rcfmt.col("v") > 0.999, None]
want = [rcfmt.dataset(local).to_table(filter=e).sort_by("id") for e in exprs]
for round in range(2):  # first: footers read and cached; second: files opened lazily, from the cache
    results = race([lambda e=e: rcfmt.dataset(uri).to_table(filter=e).sort_by("id") for e in exprs])
    for k in range(len(exprs)):
        assert results[k].equals(want[k]), (round, k)
    assert len(FOOTERS) > 0
print("OK", len(FOOTERS))
"""


def test_first_dataset_reads_in_a_fresh_interpreter_share_the_footer_cache_safely(s3, tmp_path):
    """A new process reads an S3 dataset from four threads at once, twice: the first round
    fills the footer cache while scans run with threads (grouped reads, lazily created
    pools); the second opens every file from the cache, so each file object's client
    file is opened lazily by whichever of its fetch threads reads first. Every result
    equals the local copy's."""
    n = 300_000
    t = pa.table({"id": np.arange(n), "v": np.random.default_rng(9).random(n)})
    local = tmp_path / "ds"
    uri = f"s3://{BUCKET}/fresh-ds/t"
    for where in (local, uri):
        rcfmt.write_dataset(t, where, target_file_rows=150_000, block_rows=20_000, compression="none")
    assert all(f.size > 1 << 20 for f in rcfmt.dataset(uri).files)  # not read whole at the open
    _run_fresh(_FRESH_DATASET, uri, local)


def test_nested_file_and_dataset_on_s3(s3, tmp_path, large_file_reads):
    """Nested fields read from S3 as from a local path: whole, at a selection (element
    pages through the lengths), with list_contains; a nested dataset written there."""
    from rcfmt import col, list_contains

    _, client = s3
    n = 3000
    table = pa.table({"id": pa.array(np.arange(n)),
                      "p": pa.array([{"u": {"id": int(i)}, "tags": [f"t{i % 7}", f"v{i}"]} for i in range(n)]),
                      "m": pa.array([[("k", int(i))] for i in range(n)], pa.map_(pa.string(), pa.int64()))})
    local = tmp_path / "n.rcfmt"
    rcfmt.write_table(table, local, block_rows=1000, page_rows=100, bloom_filter_columns=["p.tags.item"])
    client.put_object(Bucket=BUCKET, Key="nested/n.rcfmt", Body=local.read_bytes())
    uri = f"s3://{BUCKET}/nested/n.rcfmt"
    assert rcfmt.read_table(uri).equals(rcfmt.read_table(local))
    for flt in [col("p.u.id") == 1234, list_contains(col("p.tags"), "v2999"), (col("id") > 2500) & (col("id") < 2510)]:
        with rcfmt.open(uri) as f:
            scan = f.scan(filter=flt)
            got = scan.read()
        assert got.equals(rcfmt.read_table(local, filter=flt))
        assert got.num_rows >= 1 and scan.stats.bytes_read < local.stat().st_size / 2
    rcfmt.write_dataset(table, f"s3://{BUCKET}/nested-ds", block_rows=1000)
    ds = rcfmt.dataset(f"s3://{BUCKET}/nested-ds")
    assert ds.read(filter=col("p.u.id") >= 2990).sort_by("id").equals(table.slice(2990).cast(ds.schema))


def test_bitmap_indexes_cost_two_requests_on_object_storage(s3, server_log, large_file_reads, tmp_path):
    """A count that bitmap indexes decide reads, after the open, the index directory and
    the entries of every block (coalesced; up to 8 blocks, more in one more request): two
    requests; a read of the selected rows adds the projected pages."""
    _, client = s3
    rng = np.random.default_rng(11)
    n = 5 * 8192
    table = pa.table({"mode": pa.array(rng.choice(["AIR", "MAIL", "SHIP"], n)),
                      "flag": pa.array(rng.choice(["A", "N", "R"], n)), "v": rng.integers(0, 1 << 40, n)})
    local = tmp_path / "b.rcfmt"
    rcfmt.write_table(table, local, block_rows=8192, bitmap_indexes={"mode": "equality", "flag": "equality"})
    client.put_object(Bucket=BUCKET, Key="data/b.rcfmt", Body=local.read_bytes())
    expr = (rcfmt.col("mode") == "AIR") & (rcfmt.col("flag") == "R")
    expected = table.filter(pc.and_(pc.equal(table["mode"], "AIR"), pc.equal(table["flag"], "R")))
    with rcfmt.open(f"s3://{BUCKET}/data/b.rcfmt") as f:
        opened = f.requests
        scan = f.scan([], filter=expr)
        assert scan.count() == expected.num_rows
        assert f.requests - opened == 2 and scan.stats.rows_decoded == 0
        assert scan.stats.rows_selected_index == expected.num_rows
        assert server_log.gets("data/b.rcfmt") == f.requests
        got = f.scan(["v"], filter=expr).read()
        assert got.column("v").to_pylist() == expected.column("v").to_pylist()


def test_remote_bitmap_entries_are_fetched_past_the_first_blocks_only_if_they_narrow(s3, large_file_reads, tmp_path,
                                                                                     monkeypatch):
    """On object storage the entries of the first 8 blocks come first; the other blocks'
    are fetched only if those decided something (an index on a 1-in-3 value next to a
    leaf it cannot answer narrows nothing: its bytes would be moved for nothing), and
    the rows are the brute-force filter's either way (NULLs among the indexed values)."""
    from rcfmt.file.reader import RcfmtFile
    from oracle_filter import selection_mask

    _, client = s3
    rng = np.random.default_rng(12)
    n = 20 * 1024
    mode = rng.choice(["AIR", "MAIL", "SHIP"], n).astype(object)
    mode[rng.random(n) < 0.05] = None
    table = pa.table({"mode": pa.array(mode, pa.string()),
                      "flag": pa.array(rng.choice(["A", "N", "R"], n)), "v": rng.integers(0, 1000, n)})
    local = tmp_path / "p.rcfmt"
    rcfmt.write_table(table, local, block_rows=1024, bitmap_indexes={"mode": "equality", "flag": "equality"})
    client.put_object(Bucket=BUCKET, Key="data/p.rcfmt", Body=local.read_bytes())
    asked = set()
    real = RcfmtFile.bitmap_span
    monkeypatch.setattr(RcfmtFile, "bitmap_span", lambda self, b, c: asked.add(b) or real(self, b, c))
    for expr, narrows in (((rcfmt.col("mode") == "AIR") & (rcfmt.col("v") < 900), False),
                          ((rcfmt.col("mode") == "AIR") & (rcfmt.col("flag") == "R"), True)):
        asked.clear()
        with rcfmt.open(f"s3://{BUCKET}/data/p.rcfmt") as f:
            got = f.scan(["v"], filter=expr, use_threads=False).read()
        assert got.equals(table.filter(pa.array(selection_mask(expr, table))).select(["v"]))
        assert asked == (set(range(20)) if narrows else set(range(8)))


def test_deletes_updates_and_merges_on_s3(s3):
    from store_commits import check_row_changes

    _, client = s3
    check_row_changes(f"s3://{BUCKET}/dsw/changes", _table(), lambda: _keys(client, "dsw/changes/"),
                                    "dsw/changes")


def test_vacuum_keeps_escaped_partition_values_on_s3(s3):
    from store_commits import check_vacuum_keeps_escaped_partition_values

    _, client = s3

    def every_key():  # (the "directory" objects too, which _keys leaves out)
        return sorted(o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix="dsw/escaped/").get("Contents", []))

    check_vacuum_keeps_escaped_partition_values(f"s3://{BUCKET}/dsw/escaped", every_key, "dsw/escaped")


def test_remote_scans_read_exactly_what_their_plans_fetch(remote_file):
    """On object storage too, each block's first read is its plan's ``fetch`` (the filter
    columns' candidate pages, the projection riding along when few; blocks read with
    their neighbours in one request), and the rows are the oracle's."""
    from scan.test_plan import _check_reads_follow_plan, _recorded_scan

    uri, _, table = remote_file
    ids = table["id"].to_numpy()
    col, kinds = rcfmt.col, set()
    for columns, expr in ((None, col("id") == 7_000), (["x"], (col("id") >= 5_000) & (col("id") < 9_000)),
                          (["s"], col("x") < 0.5), (None, None)):
        with rcfmt.open(uri, fetch=rcfmt.FetchOptions(tail_bytes=64)) as f:
            plan, reads, got = _recorded_scan(f, columns, expr)
            _check_reads_follow_plan(f, plan, reads, columns)
        assert reads
        kinds.update((b.read, b.ride) for b in plan.blocks)
        want = table if expr is None else table.filter(pa.array(
            (ids == 7_000) if columns is None else ((ids >= 5_000) & (ids < 9_000)) if columns == ["x"]
            else table["x"].to_numpy() < 0.5))
        assert got.equals(want.select(got.column_names))
    assert {("ranged", True), ("group", False)} <= kinds, kinds


def test_two_endpoints_holding_the_same_key_are_two_datasets(s3, monkeypatch):
    """A dataset at one URI on two S3 endpoints (a primary and its replica): a process
    that read it on one and then reads it on the other reads the other's versions.
    Decoded versions were kept by path and size alone, so a same-size version 2 of the
    replica (other rows deleted, by another process) was served from the primary's."""
    endpoint_a, a = s3
    server_b = subprocess.Popen(
        [sys.executable, "-c", "import sys; from moto.server import ThreadedMotoServer; "
         "s = ThreadedMotoServer(ip_address='127.0.0.1', port=0, verbose=False); s.start(); "
         "print('http://%s:%d' % s.get_host_and_port(), flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        endpoint_b = server_b.stdout.readline().strip()
        b = boto3.client("s3", endpoint_url=endpoint_b)
        b.create_bucket(Bucket=BUCKET)
        uri, prefix, x = f"s3://{BUCKET}/replicated", "replicated/", rcfmt.col("x")
        version_2 = f"{prefix}_rcfmt/v{2:020d}.rcfmt"
        rcfmt.write_dataset(pa.table({"x": pa.array(range(1000), pa.int64())}), uri)
        first = {o["Key"]: a.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
                 for o in a.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]}
        rcfmt.dataset(uri).delete((x >= 100) & (x < 110))
        assert 105 not in rcfmt.dataset(uri).to_table().column("x").to_pylist()
        size_a = a.head_object(Bucket=BUCKET, Key=version_2)["ContentLength"]
        env_b = {**os.environ, "AWS_ENDPOINT_URL": endpoint_b}
        for attempt in range(90):  # (the replica's version 2, written elsewhere, until it is the same size:
            # its compressed index varies by a byte or two with the ids in it; ranges of another
            # width shift it too, so that some attempt meets the primary's size)
            for key in [o["Key"] for o in b.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])]:
                b.delete_object(Bucket=BUCKET, Key=key)
            for key, body in first.items():
                b.put_object(Bucket=BUCKET, Key=key, Body=body)
            low, width = 110 + 10 * (attempt % 85), (10, 9, 11)[attempt % 3]
            subprocess.run([sys.executable, "-c", f"import rcfmt; x = rcfmt.col('x'); rcfmt.dataset({uri!r})"
                            f".delete((x >= {low}) & (x < {low + width}))"], check=True, env=env_b)
            if b.head_object(Bucket=BUCKET, Key=version_2)["ContentLength"] == size_a:
                break
        else:
            pytest.fail("no replica version 2 of the primary's size")
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint_b)
        rows = rcfmt.dataset(uri).to_table().column("x").to_pylist()
        assert 105 in rows and low + 5 not in rows and len(rows) == 1000 - width
        rcfmt.write_dataset(pa.table({"x": pa.array([-1], pa.int64())}), uri)  # (an append starts from B's rows)
        rows = rcfmt.dataset(uri).to_table().column("x").to_pylist()
        assert 105 in rows and low + 5 not in rows and len(rows) == 1001 - width
    finally:
        server_b.stdin.close()
        server_b.wait()


def test_a_body_that_breaks_off_is_read_again_and_transport_errors_are_storage_errors(s3, monkeypatch):
    """A GET whose body breaks off (urllib3's ProtocolError, which botocore lets through
    unwrapped, for error answers too) is asked for again by read_object (a commit's
    read-back: one broken body made a lost race an unknown outcome), and is a
    StorageError where it persists; a hint read so falls back to a listing."""
    from urllib3.exceptions import ProtocolError

    from rcfmt.storage import s3 as s3_store

    _, client = s3
    client.put_object(Bucket=BUCKET, Key="broken/obj", Body=b"payload")
    real = s3_store.client().get_object
    breaks = [1]

    class Broken:
        def read(self):
            raise ProtocolError("Connection broken: IncompleteRead")

    def get_object(**kwargs):
        answer = real(**kwargs)
        if breaks and kwargs["Key"].startswith("broken/"):
            breaks.pop()
            return {**answer, "Body": Broken()}
        return answer

    monkeypatch.setattr(s3_store.client(), "get_object", get_object)
    assert s3_store.read_object(f"s3://{BUCKET}/broken/obj") == b"payload" and not breaks
    breaks.extend([1] * 10)
    with pytest.raises(rcfmt.StorageError, match="Connection broken"):
        s3_store.read_object(f"s3://{BUCKET}/broken/obj")

    def unanswered(**kwargs):
        raise ProtocolError("Connection broken: IncompleteRead")

    breaks.clear()
    uri = f"s3://{BUCKET}/broken/ds"
    rcfmt.write_dataset(pa.table({"x": [1, 2]}), uri)
    monkeypatch.setattr(s3_store.client(), "get_object", lambda **k: unanswered() if k["Key"].endswith(
        "_last_version") else real(**k))
    assert rcfmt.dataset(uri).read()["x"].to_pylist() == [1, 2]  # (the hint passed over: a listing)
    monkeypatch.setattr(s3_store.client(), "get_object", unanswered)
    with pytest.raises(rcfmt.StorageError, match="Connection broken"):
        s3_store.read_object(f"s3://{BUCKET}/broken/obj")


def test_a_merged_run_whose_upload_fails_is_deleted(s3, monkeypatch):
    """The seventeenth append merges sixteen changes into a run; its upload lands but
    answers an error: the append fails and deletes the run (before: left behind)."""
    from rcfmt.dataset import commits as commits_module

    _, client = s3
    uri = f"s3://{BUCKET}/runfail/t"
    for i in range(17):
        rcfmt.write_dataset(pa.table({"x": [i]}), uri)
    assert _keys(client, "runfail/t/_rcfmt/runs/") == []
    real = commits_module.replace_object

    def landed_then_failed(target, data):
        real(target, data)
        raise rcfmt.StorageError("connection reset")

    monkeypatch.setattr(commits_module, "replace_object", landed_then_failed)
    with pytest.raises(rcfmt.StorageError, match="connection reset"):
        rcfmt.write_dataset(pa.table({"x": [17]}), uri)
    assert _keys(client, "runfail/t/_rcfmt/runs/") == []
    monkeypatch.undo()
    assert sorted(rcfmt.dataset(uri).read()["x"].to_pylist()) == list(range(17))


def test_the_maintenance_commands_refuse_what_is_no_dataset_on_s3(s3, capsys):
    """``history``, ``vacuum`` and ``optimize`` on an S3 prefix with nothing under it, a
    bucket that does not exist or an object: exit 1 with a message, as locally (before:
    "would remove 0 files", an empty history of the parent prefix, "nothing to do")."""
    from rcfmt.cli import main

    _, client = s3
    client.put_object(Bucket=BUCKET, Key="cli/a.rcfmt", Body=b"x")
    cases = [(["vacuum", f"s3://{BUCKET}/cli/none", "--dry-run"], "no such dataset"),
             (["history", f"s3://{BUCKET}/cli/a.rcfmt"], "is an object, not a dataset"),
             (["optimize", f"s3://{BUCKET}/cli/a.rcfmt"], "is an object, not a dataset"),
             (["vacuum", "s3://rcfmt-no-such-bucket/ds", "--dry-run"], "")]
    for args, message in cases:
        capsys.readouterr()
        assert main(args) == 1, args
        assert message in capsys.readouterr().err
    uri = f"s3://{BUCKET}/cli/ds"
    rcfmt.write_dataset(pa.table({"x": [1]}), uri)
    assert main(["history", uri]) == 0
