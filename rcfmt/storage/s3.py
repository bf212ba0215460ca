"""S3: its client settings, pyarrow's and boto3's clients, reads in one request, and commits.

:func:`s3_settings` gives the clients' endpoint, region and credentials instead of the
environment's (``AWS_*``; the Spark data source's options). Listings and writes go
through pyarrow's ``S3FileSystem`` (:func:`filesystem`); reads and a dataset version's
commit (:func:`create_if_absent`, a PUT with ``If-None-Match: *``) through boto3.

Reading ``s3://`` objects with boto3: an open is one request.

pyarrow's S3 client opens a file with a HEAD (its Python API takes only a path, so the
size a caller knows cannot be handed over): a remote open was a HEAD and the tail's
GET, and every data file of a dataset cost a HEAD before its first read although the
index holds its size. With boto3 (the ``rcfmt[s3]`` extra, which dataset commits need
too) an open is one GET with a suffix range (``Range: bytes=-N``, N the tail the fetch
policy reads): the answer's ``Content-Range`` names the size and its body is the tail
(:attr:`S3Object.prefetched`, which the reader takes instead of reading it again).
Later reads are ranged GETs pinned to the ETag that answer carried (``If-Match``): a
file replaced mid-read is an error, never a mix of two versions. Objects whose size the
caller knows make no request before their first read, and are not pinned (a dataset's
files are never rewritten under their names).

Transient failures (throttling, 5xx, a dropped connection, a timeout) are retried by
botocore's standard mode, :data:`ATTEMPTS` attempts in all, each waiting at most
:data:`CONNECT_TIMEOUT` to connect and :data:`READ_TIMEOUT` for the server's next bytes.
URIs with a query (pyarrow's ``?region=...`` options) and explicit ``filesystem=``
paths stay on pyarrow's client, as do writes and listings.
"""
from __future__ import annotations

import contextlib
import email.utils
import os
import re
import threading
import time

from ..errors import InvalidOptionError, RcfmtError, StorageError
from .base import ByteSource, DirectoryError, ProcessSetting
from .fetch import FETCH_CONCURRENCY
from .paths import bucket_and_key, endpoint_parts

__all__ = ["identity", "S3_SETTINGS", "check_s3_settings", "s3_settings", "current_settings", "filesystem", "boto3_arguments", "delete",
           "S3Object", "open", "client", "create_if_absent", "read_object", "size", "replace_object", "stale_uploads",
           "CONNECT_TIMEOUT",
           "READ_TIMEOUT", "ATTEMPTS"]

#: seconds a request waits to connect, and then for the server's next bytes
CONNECT_TIMEOUT, READ_TIMEOUT = 10, 60
#: attempts per request (the first and its retries)
ATTEMPTS = 4
#: the environment boto3 reads for its endpoint and credentials (a client made under
#: other values is not reused)
_ENVIRONMENT = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE")
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")
_CLIENTS: dict = {}  # one boto3 client per distinct settings and environment
_CLIENTS_LOCK = threading.Lock()
#: the settings :func:`s3_settings` accepts
S3_SETTINGS = ("endpoint", "region", "access_key", "secret_key", "session_token")
_SETTINGS = ProcessSetting()  # in force: they take precedence over the environment
_FILESYSTEMS: dict = {}  # one pyarrow client per distinct settings
_FILESYSTEMS_LOCK = threading.Lock()


def check_s3_settings(settings) -> dict:
    """``settings`` checked (:data:`S3_SETTINGS` only, non-empty strings, keys in pairs),
    without the unset ones; InvalidOptionError otherwise."""
    settings = {k: v for k, v in dict(settings).items() if v is not None}
    unknown = sorted(set(settings) - set(S3_SETTINGS))
    if unknown:
        raise InvalidOptionError(f"unknown S3 settings {unknown}; known: {list(S3_SETTINGS)}")
    for key, value in settings.items():
        if not isinstance(value, str) or not value:
            raise InvalidOptionError(f"S3 setting {key} must be a non-empty string")
    if ("access_key" in settings) != ("secret_key" in settings):
        raise InvalidOptionError("S3 settings need access_key and secret_key together")
    if "session_token" in settings and "access_key" not in settings:
        raise InvalidOptionError("the S3 setting session_token needs access_key and secret_key")
    return settings


@contextlib.contextmanager
def s3_settings(settings):
    """Within the block, ``s3://`` URIs are read and written with these client settings
    (``endpoint``, e.g. ``http://127.0.0.1:9000`` or ``s3.eu-west-1.amazonaws.com``;
    ``region``; ``access_key`` and ``secret_key``; ``session_token``) instead of what
    the environment says (``AWS_*``); settings left out still come from there. None or
    empty: the environment alone. The settings hold for the whole process, for Spark's
    Python workers (one task at a time each): not for threads that need different ones
    at once."""
    with _SETTINGS.replaced(check_s3_settings(settings) if settings else None):
        yield


def current_settings() -> dict | None:
    """The settings :func:`s3_settings` put in force, or None (the environment's)."""
    return _SETTINGS.value


def filesystem(settings: dict):
    """pyarrow's ``S3FileSystem`` for ``settings`` (one per distinct settings)."""
    import pyarrow.fs as pafs

    key = tuple(sorted(settings.items()))
    with _FILESYSTEMS_LOCK:
        fs = _FILESYSTEMS.get(key)
        if fs is None:
            kwargs = {k: settings[k] for k in ("region", "access_key", "secret_key", "session_token") if k in settings}
            if "endpoint" in settings:
                kwargs["scheme"], kwargs["endpoint_override"] = endpoint_parts(settings["endpoint"])
            fs = _FILESYSTEMS[key] = pafs.S3FileSystem(**kwargs)
        return fs


def boto3_arguments(settings: dict | None) -> dict:
    """boto3's client arguments for ``settings`` (:data:`S3_SETTINGS`)."""
    if not settings:
        return {}
    out = {}
    if "endpoint" in settings:
        scheme, host = endpoint_parts(settings["endpoint"])
        out["endpoint_url"] = f"{scheme}://{host}"
    for ours, theirs in (("region", "region_name"), ("access_key", "aws_access_key_id"),
                         ("secret_key", "aws_secret_access_key"), ("session_token", "aws_session_token")):
        if ours in settings:
            out[theirs] = settings[ours]
    return out


def client():
    """boto3's S3 client for the settings in force (:func:`s3_settings`, else the
    environment): one per distinct settings, shared by threads (boto3 clients are
    thread-safe), with enough connections for every read in flight
    (:data:`~rcfmt.storage.fetch.FETCH_CONCURRENCY`)."""
    settings = _SETTINGS.value
    key = (tuple(sorted((settings or {}).items())), tuple(os.environ.get(k) for k in _ENVIRONMENT),
           CONNECT_TIMEOUT, READ_TIMEOUT, ATTEMPTS)
    with _CLIENTS_LOCK:
        found = _CLIENTS.get(key)
    if found is not None:
        return found
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=CONNECT_TIMEOUT, read_timeout=READ_TIMEOUT,
                    retries={"mode": "standard", "total_max_attempts": ATTEMPTS},
                    max_pool_connections=FETCH_CONCURRENCY + 8)
    made = boto3.session.Session().client("s3", config=config, **boto3_arguments(settings))
    with _CLIENTS_LOCK:
        return _CLIENTS.setdefault(key, made)


def _errors() -> tuple:
    from botocore.exceptions import ClientError

    return (*_transport(), ClientError)


def _transport() -> tuple:
    """What a request that got no usable answer raises: botocore's errors, after its own
    retries, and urllib3's (an error answer whose body broke off is read by botocore
    unwrapped)."""
    from botocore.exceptions import BotoCoreError
    from urllib3.exceptions import HTTPError

    return BotoCoreError, HTTPError


def _code(exc) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code") or response.get("ResponseMetadata", {}).get("HTTPStatusCode"))


class S3Object(ByteSource):
    """The object ``key`` of ``bucket``; ``size`` when the caller knows it (then no
    request is made before the first read), else the open reads the last ``tail``
    bytes with the size (:attr:`prefetched`)."""

    remote = True

    def __init__(self, bucket: str, key: str, display: str, size: int | None = None, tail: int = 1 << 20):
        self._bucket, self._key, self._display = bucket, key, display
        self._client = client()
        self.identity = ("s3", str(self._client.meta.endpoint_url))  # (as :func:`identity` says)
        self._etag = None
        self._closed = False
        #: ``(offset, bytes)`` read from the end of the object at the open, or None
        self.prefetched: tuple[int, bytes] | None = None
        if size is None:
            self._open_with_tail(max(1, int(tail)))
        else:
            self.size = int(size)

    def _get(self, what: str, **kwargs):
        """``(answer, body)`` of a GET of the object (see :func:`_get_object`)."""
        return _get_object(self._client, self._bucket, self._key, f"{what} {self._display!r}", **kwargs)

    def _open_with_tail(self, tail: int) -> None:
        try:
            answer, data = self._get("opening", Range=f"bytes=-{tail}")
        except _errors() as exc:
            code = _code(exc)
            if code in ("NoSuchKey", "404"):
                self._missing()
            if code in ("InvalidRange", "416"):  # an empty object
                self.size, self._etag, self.prefetched = 0, None, (0, b"")
                return
            raise StorageError(f"opening {self._display!r} failed: {exc}") from None
        m = _CONTENT_RANGE.match(answer.get("ContentRange") or "")
        if m:
            self.size, start = int(m.group(3)), int(m.group(1))
        else:  # a whole-object answer (200): the object is shorter than the tail
            self.size, start = len(data), 0
        if start + len(data) != self.size:
            raise StorageError(f"opening {self._display!r} failed: the server answered the tail read with "
                               f"{len(data)} bytes at {start} of {self.size}")
        self._etag = answer.get("ETag")
        self.prefetched = (start, data)

    def _missing(self):
        """Raise FileNotFoundError, or DirectoryError if the key is a prefix of others."""
        try:
            below = self._client.list_objects_v2(Bucket=self._bucket, Prefix=self._key.rstrip("/") + "/", MaxKeys=1)
        except _errors() as exc:
            raise StorageError(f"opening {self._display!r} failed: {exc}") from None
        if below.get("KeyCount"):
            raise DirectoryError(self._display) from None
        raise FileNotFoundError(f"no such file: {self._display!r}") from None

    def read_at(self, offset: int, length: int) -> bytes:
        if self._closed:
            raise RcfmtError("file is closed")
        end = min(offset + length, self.size)
        if end <= offset:
            return b""
        pinned = {"IfMatch": self._etag} if self._etag else {}
        try:
            data = self._get(f"reading bytes [{offset}, {end}) of", Range=f"bytes={offset}-{end - 1}", **pinned)[1]
        except _errors() as exc:
            code = _code(exc)
            if code in ("PreconditionFailed", "412"):
                raise StorageError(f"{self._display!r} was replaced while it was read") from None
            if code in ("NoSuchKey", "404"):
                if self._etag is None:
                    raise FileNotFoundError(f"no such file: {self._display!r}") from None
                raise StorageError(f"{self._display!r} was deleted while it was read") from None
            raise StorageError(f"reading bytes [{offset}, {end}) of {self._display!r} failed: {exc}") from None
        if len(data) > end - offset:  # (a server or proxy that ignored the Range: never bytes taken as others)
            raise StorageError(f"reading bytes [{offset}, {end}) of {self._display!r} failed: the server answered "
                               f"with {len(data)} bytes")
        return data

    def close(self) -> None:
        self._closed = True
        self.prefetched = None


def identity(uri: str) -> tuple:
    """Which store ``uri`` is read from under the settings in force: its endpoint."""
    return "s3", str(client().meta.endpoint_url)


def open(uri: str, size: int | None = None, tail: int = 1 << 20) -> S3Object:  # noqa: A001 (the store protocol)
    """The object ``uri`` for reading (:class:`S3Object`)."""
    bucket, key = bucket_and_key(uri)
    return S3Object(bucket, key, uri, size, tail)


def create_if_absent(uri: str, data: bytes) -> bool:
    """PUT ``data`` as ``uri`` with ``If-None-Match: *``: True if created, False if the
    server refused because the object exists (or another writer's create of it is in
    flight)."""
    from botocore.exceptions import ClientError

    bucket, key = bucket_and_key(uri)
    try:
        client().put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = exc.response.get("Error", {}).get("Code")
        if status in (409, 412) or code in ("PreconditionFailed", "ConditionalRequestConflict"):
            return False
        raise StorageError(str(exc)) from None
    except _transport() as exc:  # connection failures, after boto3's own retries
        raise StorageError(str(exc)) from None
    return True


def _get_object(s3, bucket: str, key: str, what: str, **kwargs):
    """``(answer, body)`` of a GET of ``key``. botocore retries what fails before the
    body arrives; a body that breaks off is asked for again here, up to
    :data:`ATTEMPTS` times in all (a StorageError naming ``what`` after that, or when
    no answer came). ClientError (the server's refusals) propagates."""
    failure = None
    for _ in range(ATTEMPTS):
        try:
            answer = s3.get_object(Bucket=bucket, Key=key, **kwargs)
        except _transport() as exc:  # after botocore's own retries
            raise StorageError(f"{what} failed: {exc}") from None
        try:
            return answer, answer["Body"].read()
        except _transport() as exc:
            failure = exc
    raise StorageError(f"{what} failed: {failure}")


def read_object(uri: str, limit: int | None = None) -> bytes | None:
    """The object's bytes (its first ``limit`` at most); None if it does not exist (a
    create still in flight)."""
    from botocore.exceptions import ClientError

    bucket, key = bucket_and_key(uri)
    ranged = {} if limit is None else {"Range": f"bytes=0-{max(limit, 1) - 1}"}
    try:
        return _get_object(client(), bucket, key, f"reading {uri!r}", **ranged)[1]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return None
        raise StorageError(str(exc)) from None


def size(uri: str) -> int | None:
    """Bytes of the object ``uri`` (one HEAD); None if there is none."""
    from botocore.exceptions import ClientError

    bucket, key = bucket_and_key(uri)
    try:
        return int(client().head_object(Bucket=bucket, Key=key)["ContentLength"])
    except ClientError as exc:
        if str(exc.response.get("Error", {}).get("Code")) in ("404", "NoSuchKey", "NotFound"):
            return None
        raise StorageError(f"looking up {uri!r} failed: {exc}") from None
    except _transport() as exc:
        raise StorageError(f"looking up {uri!r} failed: {exc}") from None


def delete(uri: str) -> None:
    """Delete the object ``uri`` (one request; a missing one is no error). Unlike
    pyarrow's ``delete_file``, it leaves no empty "directory" object behind for the
    prefix that held it."""
    from botocore.exceptions import ClientError

    bucket, key = bucket_and_key(uri)
    try:
        client().delete_object(Bucket=bucket, Key=key)
    except (*_transport(), ClientError) as exc:
        raise StorageError(f"deleting {uri!r} failed: {exc}") from None


def stale_uploads(uri: str, cutoff: float, abort: bool, wanted) -> list[str]:
    """The multipart uploads below the prefix ``uri`` begun before ``cutoff`` (seconds
    since the epoch) whose key below it ``wanted(key)`` accepts, as those keys: uploads
    a killed or cancelled writer never completed, which no listing of objects shows and
    whose parts the bucket keeps (and bills). ``abort``: abort them too. Best effort: an
    upload that cannot be aborted is left out, and a listing the server refuses (the
    permission ``s3:ListBucketMultipartUploads`` not granted) gives none."""
    from botocore.exceptions import ClientError

    bucket, key = bucket_and_key(uri)
    prefix = f"{key.rstrip('/')}/" if key else ""
    s3, out = client(), []
    retention = time.time() - cutoff
    try:
        for page in s3.get_paginator("list_multipart_uploads").paginate(Bucket=bucket, Prefix=prefix):
            now = _server_time(page)
            for upload in page.get("Uploads", ()):
                rel = upload["Key"][len(prefix):]
                if upload["Initiated"].timestamp() >= now - retention or not wanted(rel):
                    continue
                if abort:
                    try:
                        s3.abort_multipart_upload(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])
                    except ClientError as exc:
                        if _code(exc) not in ("NoSuchUpload", "404"):
                            continue
                out.append(rel)
    except (*_transport(), ClientError):
        pass
    return out


def _server_time(answer: dict) -> float:
    """The server's time of an answer (its ``Date``), by whose clock uploads are dated;
    this machine's when it names none or one that cannot be read."""
    import datetime

    date = answer.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    try:
        when = email.utils.parsedate_to_datetime(date)
    except (TypeError, ValueError):
        return time.time()
    return (when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)).timestamp()


def replace_object(uri: str, data: bytes) -> None:
    """PUT the small ``data`` as ``uri``, replacing what is there (one request)."""
    from botocore.exceptions import ClientError

    bucket, key = bucket_and_key(uri)
    try:
        client().put_object(Bucket=bucket, Key=key, Body=data)
    except (*_transport(), ClientError) as exc:
        raise StorageError(f"writing {uri!r} failed: {exc}") from None
