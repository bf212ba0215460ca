"""Reading ``gs://`` objects: one ranged GET per read, through google-cloud-storage.

pyarrow's ``GcsFileSystem.open_input_file`` opens, besides the object's metadata, a
stream of the whole object for sequential reads, and the first call on the file (even
``size()``) sends that stream's un-ranged GET -- while holding the GIL -- before any
ranged read (pyarrow 26: three requests for an open whose tail is one read, and a
dataset scan's threads serialized for a round trip per file). rcfmt reads only ranges,
so for ``gs://`` URIs it asks the object's metadata once and then sends one ``Range``
GET per read, pinned to the generation the metadata named: a file replaced mid-read is
an error, never a mix of two versions. Objects whose size the caller knows (a dataset's
data files and index versions, never rewritten under their names) are opened without
the metadata request, and so without a generation. Writes and listings stay on
pyarrow's client.

The client is google-cloud-storage's (the ``rcfmt[gcs]`` extra, which dataset commits
need too); without it, reads fall back to pyarrow's client.
"""
from __future__ import annotations

import importlib

from . import storage
from .errors import RcfmtError, StorageError
from .storage import ByteSource, DirectoryError, _gcs_client, _gcs_environment, _gcs_errors

__all__ = ["GcsObject", "available"]

#: seconds a read waits to connect, and then for the server's next bytes
TIMEOUT = (10, 60)


def available() -> bool:
    """Whether google-cloud-storage can be imported."""
    try:
        importlib.import_module("google.cloud.storage")
    except ImportError:
        return False
    return True


def _retry():
    """google-cloud-storage's retry of transient failures, for GCS_RETRY_SECONDS in all."""
    from google.cloud.storage.retry import DEFAULT_RETRY

    return DEFAULT_RETRY.with_timeout(storage.GCS_RETRY_SECONDS)


class GcsObject(ByteSource):
    """The object ``key`` of ``bucket``; ``size`` when the caller knows it (then no
    request is made before the first read)."""

    remote = True

    def __init__(self, bucket: str, key: str, display: str, size: int | None = None):
        self._bucket, self._key, self._display = bucket, key, display
        self.identity = ("gs", _gcs_environment()[0] or "")
        self._generation = None
        self._closed = False
        if size is None:
            self.size, self._generation = self._metadata()
        else:
            self.size = int(size)

    def _metadata(self) -> tuple[int, int]:
        """``(size, generation)``; FileNotFoundError if there is no such object (a
        RcfmtError naming ``rcfmt.dataset()`` if it is a prefix of others)."""
        try:
            with _gcs_client() as client:
                bucket = client.bucket(self._bucket)
                blob = bucket.get_blob(self._key, retry=_retry(), timeout=TIMEOUT)
                if blob is None:
                    below = list(bucket.list_blobs(prefix=self._key.rstrip("/") + "/", max_results=1,
                                                   retry=_retry(), timeout=TIMEOUT))
        except _gcs_errors() as exc:
            raise StorageError(f"opening {self._display!r} failed: {exc}") from None
        if blob is None:
            if below:
                raise DirectoryError(self._display)
            raise FileNotFoundError(f"no such file: {self._display!r}")
        return int(blob.size), int(blob.generation)

    def read_at(self, offset: int, length: int) -> bytes:
        from google.api_core import exceptions

        if self._closed:
            raise RcfmtError("file is closed")
        end = min(offset + length, self.size)  # past the end GCS answers 416
        if end <= offset:
            return b""
        try:
            with _gcs_client() as client:
                blob = client.bucket(self._bucket).blob(self._key, generation=self._generation)
                return blob.download_as_bytes(start=offset, end=end - 1, raw_download=True, checksum=None,
                                              retry=_retry(), timeout=TIMEOUT)
        except exceptions.NotFound:
            if self._generation is None:
                raise FileNotFoundError(f"no such file: {self._display!r}") from None
            raise StorageError(f"{self._display!r} was replaced or deleted while it was read") from None
        except _gcs_errors() as exc:
            raise StorageError(f"reading bytes [{offset}, {end}) of {self._display!r} failed: {exc}") from None

    def close(self) -> None:
        self._closed = True
