"""GCS: pyarrow's and google-cloud-storage's clients, ranged reads, and commits.

GCS clients take Google's default credentials, or reach the emulator that
``STORAGE_EMULATOR_HOST`` names anonymously (as google-cloud-storage and gcsfs do).
Listings and writes go through pyarrow's ``GcsFileSystem`` (:func:`filesystem`); reads
and a dataset version's commit (:func:`create_if_absent`, an upload with
``ifGenerationMatch=0``) through google-cloud-storage (:func:`client`).

Reading ``gs://`` objects: one ranged GET per read, through google-cloud-storage.

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

import contextlib
import os
import threading

from ..errors import RcfmtError, StorageError
from .base import ByteSource, DirectoryError
from .paths import bucket_and_key, endpoint_parts

__all__ = ["identity", "GCS_RETRY_SECONDS", "TIMEOUT", "environment", "client", "errors", "filesystem", "GcsObject", "open",
           "create_if_absent", "read_object", "size", "replace_object"]

#: seconds a read waits to connect, and then for the server's next bytes
TIMEOUT = (10, 60)
#: how long pyarrow's GCS client (and google-cloud-storage's reads) retry what they take
#: for transient (pyarrow's own default is 15 minutes: a machine without Google
#: credentials would seem to hang that long)
GCS_RETRY_SECONDS = 60

_IDLE: dict = {}  # environment -> google-cloud-storage clients not in use (their HTTP sessions stay warm)
_IDLE_LOCK = threading.Lock()
_CREDENTIALS: dict = {}  # environment -> (credentials, project), found once per process
_CREDENTIALS_LOCK = threading.Lock()
_FILESYSTEMS: dict = {}  # environment -> pyarrow's client
_FILESYSTEMS_LOCK = threading.Lock()


def environment() -> tuple:
    """What GCS clients read from the environment: the emulator and the credentials file
    (a client made under other values is not reused)."""
    return os.environ.get("STORAGE_EMULATOR_HOST") or None, os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")


def _credentials(env: tuple) -> tuple:
    """Google's default credentials and project, looked up once per environment (a scan's
    new threads then make their clients without asking the metadata server or reading
    the key file again, and share one token)."""
    with _CREDENTIALS_LOCK:  # (threads starting together wait for the one lookup)
        found = _CREDENTIALS.get(env)
        if found is None:
            import google.auth

            found = _CREDENTIALS[env] = google.auth.default(
                scopes=["https://www.googleapis.com/auth/devstorage.read_write"])
    return found


@contextlib.contextmanager
def client():
    """``with client() as c:`` a google-cloud-storage client for this thread's exclusive
    use while the block runs (an HTTP session is not shared by threads), then kept for
    the next caller, so connections outlive the short-lived threads of a scan. The
    endpoint ``STORAGE_EMULATOR_HOST`` names (anonymously, as the library does), else
    Google's default credentials (looked up once per environment)."""
    from google.cloud import storage

    env = environment()
    with _IDLE_LOCK:
        idle = _IDLE.setdefault(env, [])
        made = idle.pop() if idle else None
    if made is None:
        if env[0]:
            made = storage.Client()
        else:
            credentials, project = _credentials(env)
            made = storage.Client(project=project, credentials=credentials)
    try:
        yield made
    finally:
        with _IDLE_LOCK:
            _IDLE.setdefault(env, []).append(made)


def errors() -> tuple:
    """What google-cloud-storage raises on failure (after its own retries): API errors,
    credentials, transport, and a download whose checksum or framing failed
    (``DataCorruption``, ``InvalidResponse``)."""
    import google.auth.exceptions
    import requests
    from google.api_core import exceptions

    media: tuple = ()
    try:  # (google-cloud-storage 3: its own; 2: those of google-resumable-media, their bases in 3)
        from google.cloud.storage.exceptions import DataCorruption, InvalidResponse
        media = (DataCorruption, InvalidResponse)
    except ImportError:
        try:
            from google.resumable_media.common import DataCorruption, InvalidResponse
            media = (DataCorruption, InvalidResponse)
        except ImportError:
            pass
    return (exceptions.GoogleAPIError, google.auth.exceptions.GoogleAuthError, requests.RequestException) + media


def filesystem():
    """pyarrow's GCS client: Google's default credentials, or the emulator at
    ``STORAGE_EMULATOR_HOST`` (the variable google-cloud-storage and gcsfs read;
    ``http://`` unless it names a scheme) without credentials. Transient failures are
    retried for :data:`GCS_RETRY_SECONDS`."""
    import datetime

    import pyarrow.fs as pafs

    env = environment()
    emulator = env[0]
    kwargs = {"retry_time_limit": datetime.timedelta(seconds=GCS_RETRY_SECONDS)}
    if emulator:
        scheme, host = endpoint_parts(emulator if "://" in emulator else f"http://{emulator}")
        kwargs.update(anonymous=True, scheme=scheme, endpoint_override=host)
    key = (env, GCS_RETRY_SECONDS)
    with _FILESYSTEMS_LOCK:
        fs = _FILESYSTEMS.get(key)
        if fs is None:
            fs = _FILESYSTEMS[key] = pafs.GcsFileSystem(**kwargs)
        return fs


def _retry():
    """google-cloud-storage's retry of transient failures, for GCS_RETRY_SECONDS in all."""
    from google.cloud.storage.retry import DEFAULT_RETRY

    return DEFAULT_RETRY.with_timeout(GCS_RETRY_SECONDS)


class GcsObject(ByteSource):
    """The object ``key`` of ``bucket``; ``size`` when the caller knows it (then no
    request is made before the first read)."""

    remote = True

    def __init__(self, bucket: str, key: str, display: str, size: int | None = None):
        self._bucket, self._key, self._display = bucket, key, display
        self.identity = identity(display)
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
            with client() as c:
                bucket = c.bucket(self._bucket)
                blob = bucket.get_blob(self._key, retry=_retry(), timeout=TIMEOUT)
                if blob is None:
                    below = list(bucket.list_blobs(prefix=self._key.rstrip("/") + "/", max_results=1,
                                                   retry=_retry(), timeout=TIMEOUT))
        except errors() as exc:
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
            with client() as c:
                blob = c.bucket(self._bucket).blob(self._key, generation=self._generation)
                data = blob.download_as_bytes(start=offset, end=end - 1, raw_download=True, checksum=None,
                                              retry=_retry(), timeout=TIMEOUT)
        except exceptions.NotFound:
            if self._generation is None:
                raise FileNotFoundError(f"no such file: {self._display!r}") from None
            raise StorageError(f"{self._display!r} was replaced or deleted while it was read") from None
        except errors() as exc:
            raise StorageError(f"reading bytes [{offset}, {end}) of {self._display!r} failed: {exc}") from None
        if len(data) > end - offset:  # (a server or proxy that ignored the range: never bytes taken as others)
            raise StorageError(f"reading bytes [{offset}, {end}) of {self._display!r} failed: the server answered "
                               f"with {len(data)} bytes")
        return data

    def close(self) -> None:
        self._closed = True


def identity(uri: str) -> tuple:
    """Which store ``uri`` is read from: Google's, or the emulator the environment names."""
    return "gs", environment()[0] or ""


def open(uri: str, size: int | None = None, tail: int = 1 << 20) -> GcsObject:  # noqa: A001 (the store protocol)
    """The object ``uri`` for reading (:class:`GcsObject`; ``tail`` is not used: the
    size comes from the object's metadata)."""
    bucket, key = bucket_and_key(uri)
    return GcsObject(bucket, key, uri, size)


def create_if_absent(uri: str, data: bytes) -> bool:
    """Upload ``data`` as ``uri`` with ``ifGenerationMatch=0`` (create only if no live
    object has the name): True if created, False if the server refused (412)."""
    from google.api_core import exceptions

    bucket, key = bucket_and_key(uri)
    try:
        with client() as c:
            c.bucket(bucket).blob(key).upload_from_string(
                data, content_type="application/octet-stream", if_generation_match=0, retry=_retry(),
                timeout=TIMEOUT)
    except exceptions.PreconditionFailed:
        return False
    except errors() as exc:  # after the library's own retries
        raise StorageError(str(exc)) from None
    return True


def read_object(uri: str, limit: int | None = None) -> bytes | None:
    """The object's bytes (its first ``limit`` at most); None if it does not exist."""
    from google.api_core import exceptions

    bucket, key = bucket_and_key(uri)
    ranged = {} if limit is None else {"start": 0, "end": max(limit, 1) - 1}
    try:
        with client() as c:
            return c.bucket(bucket).blob(key).download_as_bytes(retry=_retry(), timeout=TIMEOUT, **ranged)
    except exceptions.NotFound:
        return None
    except errors() as exc:
        raise StorageError(str(exc)) from None


def size(uri: str) -> int | None:
    """Bytes of the object ``uri`` (one metadata request); None if there is none."""
    bucket, key = bucket_and_key(uri)
    try:
        with client() as c:
            blob = c.bucket(bucket).get_blob(key, retry=_retry(), timeout=TIMEOUT)
    except errors() as exc:
        raise StorageError(f"looking up {uri!r} failed: {exc}") from None
    return None if blob is None else int(blob.size)


def replace_object(uri: str, data: bytes) -> None:
    """Upload the small ``data`` as ``uri``, replacing what is there (one request)."""
    bucket, key = bucket_and_key(uri)
    try:
        with client() as c:
            c.bucket(bucket).blob(key).upload_from_string(data, content_type="application/octet-stream",
                                                          retry=_retry(), timeout=TIMEOUT)
    except errors() as exc:
        raise StorageError(f"writing {uri!r} failed: {exc}") from None
