"""Files and datasets on Azure Blob Storage (``abfs://``, ``abfss://``, ``az://``),
against a Blob REST server on 127.0.0.1 (``tests/local_azure.py``, started here and
stopped after: no Azure emulator can be installed on these machines, so the server is
the project's own, written to Microsoft's REST reference), through the client code
users run: azure-storage-blob for reads, listings, block-staged writes, deletes and the
commit of a version (an upload with ``If-None-Match: *``); pyarrow's
``AzureFileSystem`` as the fallback for reads.

The S3 suite covers what the stores share in depth, and ``test_store_datasets.py``
every dataset operation on each store; this one checks what differs per store: the
settings, the commit primitive on the server and in races, and the requests and
faults of Azure reads and writes."""
from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import rcfmt
from rcfmt.errors import InvalidOptionError, UnsupportedError
from rcfmt.storage import DirectoryError

pytest.importorskip("azure.storage.blob")

CONTAINER = "rcfmt-az"
ROWS = 12_000


@pytest.fixture(scope="module")
def azure():
    """The test server (:class:`local_azure.AzureServer`) with the container;
    ``AZURE_STORAGE_CONNECTION_STRING`` points rcfmt's clients at it."""
    from local_azure import azure_server

    with azure_server(CONTAINER) as server:
        yield server


def _container(server):
    from azure.storage.blob import ContainerClient

    return ContainerClient.from_connection_string(server.connection_string, CONTAINER)


def _names(server, prefix: str) -> list[str]:
    return sorted(b.name for b in _container(server).list_blobs(name_starts_with=prefix))


def _table() -> pa.Table:
    i = np.arange(ROWS)
    return pa.table({"id": i, "x": np.random.default_rng(21).random(ROWS), "p": pa.array(i % 3, pa.int32()),
                     "s": pa.array([f"name-{k % 53}" for k in i])})


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([("id", "ascending")]).select(sorted(t.column_names))


# ------------------------------------------------------------------ settings and URIs
def test_uris_name_account_container_and_path():
    from rcfmt.storage.azure import split_uri

    assert split_uri("abfss://data@acct.dfs.core.windows.net/a/b.rcfmt") == ("acct", "data", "a/b.rcfmt")
    assert split_uri("abfs://data@acct.blob.core.windows.net/t/") == ("acct", "data", "t")
    assert split_uri("az://data/t/f.rcfmt") == (None, "data", "t/f.rcfmt")
    with pytest.raises(InvalidOptionError, match="names no container"):
        split_uri("az:///x")
    with pytest.raises(UnsupportedError, match="options in Azure URIs"):
        split_uri("az://data/f.rcfmt?account_key=secret")
    # a doubled slash named another blob prefix (a second dataset beside the one meant),
    # '#' a fragment, '..' a segment the HTTP client resolves away
    for bad, why in [("az://data/ps//t", "empty path component"), ("az://data/t#x", "fragment"),
                     ("az://data/t/p=a%2F../f.rcfmt", "'..' segment")]:
        with pytest.raises(InvalidOptionError, match=why):
            split_uri(bad)


def test_settings_come_from_the_environment(monkeypatch):
    from rcfmt.storage.azure import _authorities, settings

    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT",
                 "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(InvalidOptionError, match="no Azure storage account"):
        settings()
    s = settings("acct")  # Azure's default credential: no secret, the public cloud
    assert (s.account, s.key, s.sas_token, s.account_url) == ("acct", None, None, "https://acct.blob.core.windows.net")
    assert _authorities(s) == {}
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "acct")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", "a2V5")
    assert settings().key == "a2V5" and settings("acct").key == "a2V5"
    assert settings("other").key is None  # a key is never sent to another account
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING",
                       "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5==;EndpointSuffix=core.chinacloudapi.cn")
    s = settings("acct")
    assert s.key == "a2V5==" and s.account_url == "https://acct.blob.core.chinacloudapi.cn"
    assert _authorities(s)["blob_storage_authority"] == ".blob.core.chinacloudapi.cn"
    assert _authorities(s)["dfs_storage_authority"] == ".dfs.core.chinacloudapi.cn"
    with pytest.raises(InvalidOptionError, match="names the Azure account 'other'"):
        settings("other")
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true")
    s = settings()
    assert s.account == "devstoreaccount1" and s.account_url == "http://127.0.0.1:10000/devstoreaccount1"
    assert _authorities(s) == {"blob_storage_authority": "127.0.0.1:10000", "blob_storage_scheme": "http",
                               "dfs_storage_authority": "127.0.0.1:10000", "dfs_storage_scheme": "http"}


def test_settings_given_in_code_replace_the_environment(monkeypatch):
    from rcfmt.storage.azure import azure_settings, check_azure_settings, settings

    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true")
    with azure_settings({"account_name": "acct", "sas_token": "?sv=1&sig=x", "endpoint": "http://127.0.0.1:9/acct/"}):
        s = settings()
        assert (s.account, s.sas_token, s.account_url) == ("acct", "?sv=1&sig=x", "http://127.0.0.1:9/acct")
    assert settings().account == "devstoreaccount1"
    for bad, message in (({"key": "x"}, "unknown Azure settings"), ({"account_key": ""}, "non-empty"),
                         ({"connection_string": "AccountName=a", "account_key": "k"}, "give it alone"),
                         ({"account_key": "k", "sas_token": "s"}, "not both")):
        with pytest.raises(InvalidOptionError, match=message):
            check_azure_settings(bad)


# ------------------------------------------------------------------ the commit primitive
# (the server's create-if-absent, and racers for it: tests/storage/test_store_datasets.py)


def test_a_create_whose_answer_was_lost_is_taken_as_won(azure, monkeypatch):
    """A create that landed but whose answer was lost makes the client's retry find the
    blob (409): the bytes there are ours, so the commit stands. Someone else's bytes
    there are a lost race."""
    from rcfmt import storage
    from rcfmt.storage import azure as azure_store

    real = azure_store.create_if_absent
    seen = []  # (the commit goes through the store's create_if_absent, patched here)

    def landed_but_refused_on_retry(uri, data):
        seen.append(uri)
        real(uri, data)
        return False

    monkeypatch.setattr(azure_store, "create_if_absent", landed_but_refused_on_retry)
    assert storage.create_if_absent(f"az://{CONTAINER}/lost/v1", b"ours") is True
    assert len(seen) == 1 and seen[0].endswith("/lost/v1")
    monkeypatch.setattr(azure_store, "create_if_absent", lambda uri, data: False)
    assert storage.create_if_absent(f"az://{CONTAINER}/lost/v1", b"someone else's") is False


def test_without_the_client_library_a_dataset_write_is_refused_before_anything_is_written(azure, monkeypatch):
    import sys

    from rcfmt.storage import azure as azure_store

    monkeypatch.setattr(azure_store, "_SERVICES", {})  # (as in a process where it was never imported)
    monkeypatch.setitem(sys.modules, "azure.storage.blob", None)
    with pytest.raises(UnsupportedError, match=r"rcfmt\[azure\]"):
        rcfmt.write_dataset(_table(), f"az://{CONTAINER}/nolib/t")
    with pytest.raises(UnsupportedError, match=r"rcfmt\[azure\]"):
        rcfmt.write_table(_table(), f"az://{CONTAINER}/nolib/f.rcfmt")
    monkeypatch.undo()
    assert _names(azure, "nolib/") == []


# ------------------------------------------------------------------ files
def test_a_file_is_written_in_blocks_and_appears_whole(azure, monkeypatch):
    """A file is staged in blocks as it is written (never held whole; one of a block or
    less is one upload); until the commit nothing changes at its name -- an older file there stays whole and readable -- and
    an abandoned write leaves the older file as it was."""
    from rcfmt.storage import azure as azure_store
    from rcfmt.storage import open_output

    monkeypatch.setattr(azure_store, "BLOCK_BYTES", 64 << 10)
    t = _table()
    uri = f"az://{CONTAINER}/blocks/f.rcfmt"
    azure.reset_log()
    rcfmt.write_table(t.slice(0, 100), uri)  # smaller than a block: one upload
    assert [(r[0], r[1].split("?")[0].endswith("blocks/f.rcfmt"), "comp=" in r[1])
            for r in azure.requests("blocks/f.rcfmt") if r[0] == "PUT"] == [("PUT", True, False)]
    azure.reset_log()
    sink = open_output(uri)
    sink.write(b"\x00" * (300 << 10))
    assert rcfmt.read_table(uri).equals(t.slice(0, 100))  # five blocks staged, none visible
    sink.abort()
    assert rcfmt.read_table(uri).equals(t.slice(0, 100)) and _names(azure, "blocks/") == ["blocks/f.rcfmt"]
    azure.reset_log()
    rcfmt.write_table(t, uri, compression="none")
    staged = [r for r in azure.requests("blocks/f.rcfmt") if "comp=block&" in r[1] or r[1].endswith("comp=block")]
    committed = [r for r in azure.requests("blocks/f.rcfmt") if "comp=blocklist" in r[1]]
    size = _container(azure).get_blob_client("blocks/f.rcfmt").get_blob_properties().size
    assert len(staged) == -(-size // (64 << 10)) and len(committed) == 1, (len(staged), size)
    assert rcfmt.read_table(uri).equals(t)


def test_a_file_is_read_with_filters_in_every_spelling(azure):
    t = _table()
    uri = f"az://{CONTAINER}/files/f.rcfmt"
    rcfmt.write_table(t, uri, block_rows=2048, page_rows=256)
    assert _names(azure, "files/") == ["files/f.rcfmt"]
    expr = (rcfmt.col("id") >= 3000) & (rcfmt.col("s") == "name-7")
    want = t.filter(pc.and_(pc.greater_equal(t["id"], 3000), pc.equal(t["s"], "name-7")))
    for spelling in (uri, f"abfs://{CONTAINER}/files/f.rcfmt",
                     f"abfss://{CONTAINER}@devstoreaccount1.dfs.core.windows.net/files/f.rcfmt"):
        assert rcfmt.read_table(spelling, filter=expr).equals(want) and want.num_rows > 0
    with rcfmt.open(uri) as f:
        scan = f.scan(filter=rcfmt.col("id") < 100)
        assert scan.read().equals(t.slice(0, 100)) and scan.stats.blocks_pruned_stats == f.num_blocks - 1
    with pytest.raises(FileNotFoundError, match="nothing.rcfmt"):
        rcfmt.read_table(f"az://{CONTAINER}/files/nothing.rcfmt")
    with pytest.raises(DirectoryError, match="is a directory"):  # an RcfmtError and an IsADirectoryError
        rcfmt.open(f"az://{CONTAINER}/files")
    with pytest.raises(DirectoryError, match="is a directory; name a file"):
        rcfmt.write_table(t, f"az://{CONTAINER}/files")


# (dataset operations: tests/storage/test_store_datasets.py, on every store)


# ------------------------------------------------------------------ reads: requests and faults
@pytest.fixture(scope="module")
def big_azure_file(azure):
    """``(uri, table)``: a ~2.6 MB file of 10 blocks."""
    n = 320_000
    table = pa.table({"k": np.arange(n), "v": np.random.default_rng(13).random(n)})
    uri = f"az://{CONTAINER}/reads/big.rcfmt"
    rcfmt.write_table(table, uri, block_rows=32_768, page_rows=4096, compression="none")
    rcfmt.write_dataset(table, f"az://{CONTAINER}/reads/ds", target_file_rows=100_000)
    return uri, table


def test_a_point_lookup_is_three_requests(big_azure_file, azure):
    """An open asks the blob's properties and reads its tail; a point lookup then reads
    the block's page index and pages in one more request. A dataset's files, whose sizes
    the index holds, are opened without the properties request."""
    uri, table = big_azure_file
    azure.reset_log()
    with rcfmt.open(uri) as f:
        assert [r[0] for r in azure.requests("reads/big.rcfmt")] == ["HEAD", "GET"]
        got = f.read(filter=rcfmt.col("k") == 123_456)
    assert got.equals(table.slice(123_456, 1))
    sent = azure.requests("reads/big.rcfmt")
    assert len(sent) == 3 and sum(r[3] for r in sent) < f.size / 4, sent
    azure.reset_log()
    assert rcfmt.dataset(f"az://{CONTAINER}/reads/ds").read(filter=rcfmt.col("k") == 250_000)["k"].to_pylist() \
        == [250_000]
    data = azure.requests("reads/ds/part-")
    assert data and all(r[0] == "GET" for r in data), data


@pytest.fixture
def no_backoff(monkeypatch):
    """The client's waits between retries taken out (1 to 8 s each here): the tests of
    faults check what is retried and how often, not how long the client waits."""
    from azure.storage.blob import ExponentialRetry

    monkeypatch.setattr(ExponentialRetry, "get_backoff_time", lambda self, settings: 0)


@pytest.mark.parametrize("kind", ["503", "reset"])
def test_a_transient_azure_fault_mid_read_is_retried(big_azure_file, azure, no_backoff, kind):
    """One throttling answer or one dropped connection while a scan reads: the client
    retries and the rows are right."""
    uri, table = big_azure_file
    with rcfmt.open(uri) as f:
        azure.reset_log()
        azure.fault(kind, f"{CONTAINER}/reads/big.rcfmt", 1)
        got = f.read(filter=rcfmt.col("k") >= 300_000)
    assert got.equals(table.slice(300_000))
    statuses = [r[2] for r in azure.requests("reads/big.rcfmt")]
    assert [s for s in statuses if s not in (200, 206)] == [503 if kind == "503" else 0] and len(statuses) >= 2


def test_a_ranged_read_answered_with_the_whole_blob_is_a_storage_error(big_azure_file, azure):
    """A server (or proxy) that ignores a read's range and answers 200 with the whole
    blob: a StorageError naming the blob and the range, not the SDK's raw ValueError
    (no Content-Range) nor the whole blob taken for the bytes asked for."""
    uri, _ = big_azure_file
    with rcfmt.open(uri) as f:
        azure.fault("whole", f"{CONTAINER}/reads/big.rcfmt", 1000)
        try:
            for read in (lambda: f.read(), lambda: f.take([0, 319_999])):
                with pytest.raises(rcfmt.StorageError, match=r"reading bytes \[\d+, \d+\) of .*reads/big.rcfmt"):
                    read()
        finally:
            azure.fault(None)


@pytest.fixture
def azure_proxy(azure, monkeypatch):
    """A counting, fault-injecting proxy (tests/local_s3.py's) between rcfmt's Azure
    clients and the server: it sees every attempt, answered or not."""
    from local_azure import connection_string
    from local_s3 import S3Proxy

    with S3Proxy(azure.endpoint) as proxy:
        monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", connection_string(proxy.endpoint))
        yield proxy


class _Held:
    """A fault hook that holds every GET of ``name`` unanswered (a server that stopped
    answering) until :meth:`release`, then drops the connections; ``held`` counts them.
    (Only if nothing releases one for a minute -- a client that waits that long -- is
    its answer sent: a guard against a hang, not a measure of time.)"""

    def __init__(self, name: str):
        self.name, self.held = name, 0
        self._released = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, number, method, path):
        if method != "GET" or self.name not in path:
            return None
        with self._lock:
            self.held += 1
        return "reset" if self._released.wait(60) else None

    def release(self) -> None:
        self._released.set()


@pytest.mark.parametrize("fault", ["503", "stall"])
def test_a_persistent_or_stalled_azure_fault_is_a_storage_error_after_the_configured_retries(
        big_azure_file, azure, azure_proxy, no_backoff, monkeypatch, fault):
    """A server that keeps failing mid-read, or stops answering: a StorageError naming
    the blob once the client has retried the read RETRIES times (2 here) -- 3 GETs in
    all, not once more per block of the fetched group -- each answered 503, or each
    never answered and given up at the read timeout (0.5 s here)."""
    from azure.core.exceptions import HttpResponseError, ServiceResponseTimeoutError

    from rcfmt.storage import azure as azure_store

    uri, _ = big_azure_file
    monkeypatch.setattr(azure_store, "RETRIES", 2)
    monkeypatch.setattr(azure_store, "READ_TIMEOUT", 0.5)
    held = _Held("reads/big.rcfmt")
    with rcfmt.open(uri) as f:
        azure_proxy.reset_counts()
        if fault == "503":
            azure.fault("503", f"{CONTAINER}/reads/big.rcfmt", 1000)
        else:
            azure_proxy.fault = held
        try:
            with pytest.raises(rcfmt.StorageError, match="reads/big.rcfmt") as info:
                f.read(columns=["v"])
        finally:
            azure.fault(None)
            held.release()
    assert isinstance(info.value, OSError)
    cause = info.value.__context__  # the client's own error, after its retries
    sent = [r for r in azure_proxy.requests if r[0] == "GET" and "reads/big.rcfmt" in r[1]]
    if fault == "503":
        assert isinstance(cause, HttpResponseError) and cause.status_code == 503, repr(cause)
        assert [r[2] for r in sent] == [503] * 3, sent
    else:
        assert isinstance(cause, ServiceResponseTimeoutError) and "read timeout=0.5" in str(info.value), repr(cause)
        assert held.held == 3
        assert [r for r in sent if r[2] != 0] == []  # none answered (0: dropped after the error)


def test_azure_reads_fall_back_to_pyarrow_without_the_client_library(big_azure_file, monkeypatch):
    import sys

    uri, _ = big_azure_file
    monkeypatch.setitem(sys.modules, "azure.storage.blob", None)  # (as where it is not installed)
    with rcfmt.open(uri) as f:
        assert type(f._source).__name__ == "ArrowFile"
        assert f.read(filter=rcfmt.col("k") == 7)["k"].to_pylist() == [7]
