"""Azure Blob Storage: where ``abfs://``, ``abfss://`` and ``az://`` URIs lead.

URIs name a container, an account and a path, in Hadoop's ABFS spelling
(``abfss://container@account.dfs.core.windows.net/path``, what Spark users write) or
fsspec's (``az://container/path`` or ``abfs://container/path``, the account taken from
the settings below).

Settings come from the environment, as the Azure CLI, adlfs and Azurite's docs have it:
``AZURE_STORAGE_CONNECTION_STRING`` (``AccountName``, ``AccountKey`` or
``SharedAccessSignature``, ``BlobEndpoint`` -- e.g. a local emulator's -- or
``EndpointSuffix``; ``UseDevelopmentStorage=true`` for Azurite's defaults), else
``AZURE_STORAGE_ACCOUNT_NAME`` with ``AZURE_STORAGE_ACCOUNT_KEY`` or
``AZURE_STORAGE_SAS_TOKEN``, else Azure's default credential chain (environment,
managed identity, Azure CLI: pyarrow's own, and ``azure-identity``'s for commits).

Who does what:

- reads: :class:`BlobSource`, ranged GETs through ``azure-storage-blob``, each pinned to
  the ETag the open saw (a file replaced mid-read is an error, never a mix), with bounded
  retries and timeouts. pyarrow's client, the fallback without the library, takes no
  timeout: a server that answered each ranged read 200 s late held a scan for over 7
  minutes without an error (measured).
- listings (:func:`entries`, :func:`tree`, :func:`kind`): ``azure-storage-blob``, for
  the same bounds;
- pyarrow's ``AzureFileSystem`` (:func:`filesystem`): reads without that library, and
  paths given with an explicit ``filesystem=``.
- writes: :class:`BlobSink`, through ``azure-storage-blob``: the file is staged as
  blocks of :data:`BLOCK_BYTES` (a few in flight, never the whole file in memory) and
  appears whole, at once, when its block list is committed; until then nothing is at
  the path. (pyarrow's stream first uploads an empty blob over the target, and its
  ``move`` is not implemented for accounts without a hierarchical namespace.)
- deletes: ``azure-storage-blob`` (pyarrow's take a lease first and leave a directory
  marker behind);
- a dataset version's commit: :func:`create_if_absent`, an upload with
  ``If-None-Match: *``, which the service refuses (409 ``BlobAlreadyExists``) when the
  blob exists -- atomic on the server.
"""
from __future__ import annotations

import contextlib
import os
import threading
import uuid
from urllib.parse import unquote, urlsplit

from ..runtime.records import record
from ..runtime.threads import thread_pool
from ..errors import InvalidOptionError, RcfmtError, StorageError, UnsupportedError
from .base import ByteSink, ByteSource, DirectoryError, ProcessSetting
from .paths import checked_key

__all__ = ["identity", "AZURE_SETTINGS", "AzureSettings", "azure_settings", "check_azure_settings", "settings",
           "split_uri", "filesystem", "inner_path", "BlobSource", "BlobSink", "open", "create_if_absent",
           "read_object", "size", "delete", "kind", "entries", "tree"]

#: the size of the blocks a file is written in (Azure commits at most 50,000 per blob:
#: files up to 195 GiB); a file this small or smaller is one upload
BLOCK_BYTES = 4 << 20
#: blocks being uploaded at once per file written (a file being written holds at most
#: this many blocks and one being filled: a dataset write keeps one file per partition open)
BLOCKS_IN_FLIGHT = 2
#: seconds a request waits to connect, and then for the server's next bytes
CONNECTION_TIMEOUT, READ_TIMEOUT = 10, 60
#: retries of a failed request (throttling, 5xx, a dropped connection, a timeout), after
#: 1, 3, 5, ... seconds (the library's default waits 15 s and more between them)
RETRIES = 3
#: Azurite's published development account and key (``UseDevelopmentStorage=true``)
_DEV_ACCOUNT = "devstoreaccount1"
_DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@record(frozen=True)
class AzureSettings:
    """One storage account as the environment describes it."""

    account: str
    key: str | None = None
    sas_token: str | None = None
    #: ``scheme://authority[/account]`` of the blob service; None: Azure's public cloud
    blob_endpoint: str | None = None
    endpoint_suffix: str = "core.windows.net"

    @property
    def account_url(self) -> str:
        return self.blob_endpoint or f"https://{self.account}.blob.{self.endpoint_suffix}"


def _connection_string(text: str) -> dict:
    fields = {}
    for part in text.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep:
            fields[name.strip().lower()] = value.strip()
    return fields


def _from_connection_string(text: str, account: str | None, where: str) -> AzureSettings:
    f = _connection_string(text)
    if f.get("usedevelopmentstorage", "").lower() == "true":
        f = {"accountname": _DEV_ACCOUNT, "accountkey": _DEV_KEY, "blobendpoint": f"http://127.0.0.1:10000/{_DEV_ACCOUNT}"}
    named = f.get("accountname")
    if not named:
        raise InvalidOptionError(f"{where} names no AccountName")
    if account and account != named:
        raise InvalidOptionError(f"the URI names the Azure account {account!r} but {where} is for {named!r}")
    protocol = f.get("defaultendpointsprotocol", "https")
    suffix = f.get("endpointsuffix", "core.windows.net")
    endpoint = f.get("blobendpoint") or f"{protocol}://{named}.blob.{suffix}"
    return AzureSettings(named, f.get("accountkey"), f.get("sharedaccesssignature"), endpoint.rstrip("/"), suffix)


#: the settings :func:`azure_settings` accepts
AZURE_SETTINGS = ("connection_string", "account_name", "account_key", "sas_token", "endpoint")
_GIVEN = ProcessSetting()  # in force: used instead of the environment's


def check_azure_settings(given) -> dict:
    """``given`` checked (:data:`AZURE_SETTINGS` only, non-empty strings, a connection
    string alone, a key or a SAS token, not both), without the unset ones."""
    given = {k: v for k, v in dict(given).items() if v is not None}
    unknown = sorted(set(given) - set(AZURE_SETTINGS))
    if unknown:
        raise InvalidOptionError(f"unknown Azure settings {unknown}; known: {list(AZURE_SETTINGS)}")
    for key, value in given.items():
        if not isinstance(value, str) or not value.strip():
            raise InvalidOptionError(f"Azure setting {key} must be a non-empty string")
    if "connection_string" in given and len(given) > 1:
        raise InvalidOptionError("an Azure connection string says everything: give it alone, not with "
                                 f"{sorted(set(given) - {'connection_string'})}")
    if "account_key" in given and "sas_token" in given:
        raise InvalidOptionError("give an Azure account key or a SAS token, not both")
    return given


@contextlib.contextmanager
def azure_settings(given):
    """Within the block, Azure URIs are read and written with these settings
    (:data:`AZURE_SETTINGS`: a ``connection_string``; or ``account_name``,
    ``account_key`` or ``sas_token``, ``endpoint``, e.g. ``http://127.0.0.1:10000/ACCOUNT``)
    instead of the environment's. None or empty: the environment. For the whole process
    (Spark's Python workers run one task at a time), like :func:`rcfmt.storage.s3.s3_settings`."""
    with _GIVEN.replaced(check_azure_settings(given) if given else None):
        yield


def settings(account: str | None = None) -> AzureSettings:
    """The settings for ``account`` (None: the one the settings name): those of
    :func:`azure_settings` if given, else the environment's. A connection string naming
    another account than the URI's is an error, not a silent switch; a key given for
    another account is not sent."""
    given = _GIVEN.value
    if given is not None:
        if "connection_string" in given:
            return _from_connection_string(given["connection_string"], account, "the Azure connection string")
        named, key, sas, endpoint = (given.get(k) for k in ("account_name", "account_key", "sas_token", "endpoint"))
    else:
        cs = os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
        if cs:
            return _from_connection_string(cs, account, "AZURE_STORAGE_CONNECTION_STRING")
        named = os.environ.get("AZURE_STORAGE_ACCOUNT_NAME") or os.environ.get("AZURE_STORAGE_ACCOUNT")
        key = os.environ.get("AZURE_STORAGE_ACCOUNT_KEY") or os.environ.get("AZURE_STORAGE_KEY")
        sas, endpoint = os.environ.get("AZURE_STORAGE_SAS_TOKEN"), None
    account = account or named
    if not account:
        raise InvalidOptionError("no Azure storage account: write abfss://container@ACCOUNT.dfs.core.windows.net/"
                                 "path, or set AZURE_STORAGE_ACCOUNT_NAME or AZURE_STORAGE_CONNECTION_STRING")
    if named and named != account:  # the secrets belong to the account they were given for
        key = sas = None
    return AzureSettings(account, key or None, sas or None, endpoint.rstrip("/") if endpoint else None)


def split_uri(uri: str) -> tuple[str | None, str, str]:
    """``(account or None, container, path in the container)`` of an Azure URI."""
    parts = urlsplit(uri)
    if parts.query:
        raise UnsupportedError(f"{uri!r}: options in Azure URIs are not supported; use the environment "
                               f"(AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ACCOUNT_NAME, ...)")
    container, at, host = parts.netloc.rpartition("@")
    account = None
    if at:
        account = host.split(".", 1)[0]
    else:
        container = host
    if not container:
        raise InvalidOptionError(f"{uri!r} names no container")
    path = checked_key(uri, parts, unquote(parts.path).strip("/"))
    if "//" in path:  # (a blob name keeps it: another dataset than the path without it, as S3 and GCS refuse)
        raise InvalidOptionError(f"{uri!r}: an empty path component ('//') names another blob than the path "
                                 f"without it; write the path without it")
    return account, container, path


_FILESYSTEMS: dict = {}  # settings -> pyarrow's client
_FILESYSTEMS_LOCK = threading.Lock()
_SERVICES: dict = {}  # settings -> azure-storage-blob's client
_SERVICES_LOCK = threading.Lock()


def _authorities(s: AzureSettings) -> dict:
    """pyarrow's endpoint arguments for ``s``: an authority with a leading dot means
    ``account`` + authority (Azure's hosts), one without it a server that takes the
    account as the first path segment (emulators)."""
    if not s.blob_endpoint:
        return {}
    parts = urlsplit(s.blob_endpoint)
    host = parts.netloc
    if host.startswith(s.account + "."):
        blob = host[len(s.account):]
        dfs = blob.replace(".blob.", ".dfs.", 1)
    else:
        blob = dfs = host
    scheme = parts.scheme or "https"
    return {"blob_storage_authority": blob, "blob_storage_scheme": scheme,
            "dfs_storage_authority": dfs, "dfs_storage_scheme": scheme}


def inner_path(uri: str) -> str:
    """``container/path`` of an Azure URI, as pyarrow's ``AzureFileSystem`` names it."""
    _, container, inner = split_uri(uri)
    return f"{container}/{inner}".rstrip("/")


def filesystem(s: AzureSettings):
    """pyarrow's ``AzureFileSystem`` for the account (one per settings)."""
    import pyarrow.fs as pafs

    with _FILESYSTEMS_LOCK:
        fs = _FILESYSTEMS.get(s)
        if fs is None:
            kwargs = _authorities(s)
            if s.key:
                kwargs["account_key"] = s.key
            elif s.sas_token:
                kwargs["sas_token"] = s.sas_token.lstrip("?")
            fs = _FILESYSTEMS[s] = pafs.AzureFileSystem(s.account, **kwargs)
        return fs


def _service(s: AzureSettings):
    """azure-storage-blob's client for the account (thread-safe; one per settings)."""
    with _SERVICES_LOCK:
        client = _SERVICES.get(s)
    if client is not None:
        return client
    try:
        from azure.storage.blob import BlobServiceClient
    except ImportError:
        raise UnsupportedError("writing to Azure needs azure-storage-blob (pip install 'rcfmt[azure]')") from None
    if s.key:
        credential = {"account_name": s.account, "account_key": s.key}
    elif s.sas_token:
        credential = s.sas_token.lstrip("?")
    else:
        try:
            from azure.identity import DefaultAzureCredential
        except ImportError:
            raise UnsupportedError("no Azure key or SAS token in the environment, and azure-identity (for Azure's "
                                   "default credentials) is not installed: pip install azure-identity") from None
        credential = DefaultAzureCredential()
    from azure.storage.blob import ExponentialRetry

    client = BlobServiceClient(s.account_url, credential=credential,
                               retry_policy=ExponentialRetry(initial_backoff=1, increment_base=2, retry_total=RETRIES))
    with _SERVICES_LOCK:
        return _SERVICES.setdefault(s, client)


def _blob(uri: str):
    account, container, path = split_uri(uri)
    if not path:
        raise InvalidOptionError(f"{uri!r} names no blob")
    return _service(settings(account)).get_blob_client(container, path)


def _errors() -> tuple:
    from azure.core.exceptions import AzureError

    return (AzureError,)


def _call_options() -> dict:
    """Per-request options: timeouts and retries as this module's settings say now."""
    return {"connection_timeout": CONNECTION_TIMEOUT, "read_timeout": READ_TIMEOUT, "retry_total": RETRIES}


class _MemoryWriter:
    """A stream the downloaded chunks are written into: a memoryview filled in order."""

    def __init__(self, out: memoryview):
        self._out, self._at = out, 0

    def write(self, data) -> int:
        n = len(data)
        if self._at + n > len(self._out):  # (an answer longer than the range asked for)
            raise ValueError(f"the server answered with more than the {len(self._out)} bytes asked for")
        self._out[self._at:self._at + n] = data
        self._at += n
        return n

    def seekable(self) -> bool:
        return False


class BlobSource(ByteSource):
    """The blob ``uri``, read by ranged GETs; ``size`` when the caller knows it (then no
    request is made before the first read, and reads are not pinned to an ETag: a
    dataset's files are never rewritten under their names)."""

    remote = True

    def __init__(self, uri: str, size: int | None = None):
        self._display = uri
        self.identity = identity(uri)
        self._client = _blob(uri)
        self._etag = None
        self._closed = False
        if size is None:
            self.size, self._etag = self._properties()
        else:
            self.size = int(size)

    def _properties(self) -> tuple[int, str]:
        """``(size, ETag)``; FileNotFoundError if there is no such blob (DirectoryError if
        it is a prefix of others)."""
        from azure.core.exceptions import ResourceNotFoundError

        try:
            props = self._client.get_blob_properties(**_call_options())
        except ResourceNotFoundError:
            if kind(self._display) == "dir":
                raise DirectoryError(self._display) from None
            raise FileNotFoundError(f"no such file: {self._display!r}") from None
        except _errors() as exc:
            raise StorageError(f"opening {self._display!r} failed: {exc}") from None
        return int(props.size), props.etag

    def _download(self, offset: int, length: int):
        from azure.core import MatchConditions
        from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError

        if self._closed:
            raise RcfmtError("file is closed")
        pinned = {"etag": self._etag, "match_condition": MatchConditions.IfNotModified} if self._etag else {}
        try:
            return self._client.download_blob(offset=offset, length=length, max_concurrency=1, **pinned,
                                              **_call_options())
        except ResourceModifiedError:
            raise StorageError(f"{self._display!r} was replaced while it was read") from None
        except ResourceNotFoundError:
            if self._etag is None:
                raise FileNotFoundError(f"no such file: {self._display!r}") from None
            raise StorageError(f"{self._display!r} was deleted while it was read") from None
        except (*_errors(), ValueError) as exc:  # (ValueError: the SDK refusing an answer it cannot place,
            # e.g. a whole blob without Content-Range from a server or proxy that ignored the range)
            raise StorageError(f"reading bytes [{offset}, {offset + length}) of {self._display!r} failed: "
                               f"{exc}") from None

    def read_at(self, offset: int, length: int) -> bytes:
        length = min(length, self.size - offset)
        if length <= 0:
            return b""
        try:
            data = self._download(offset, length).readall()
        except (*_errors(), ValueError) as exc:  # (a body that broke off after the retries, or was refused)
            if isinstance(exc, RcfmtError):
                raise
            raise StorageError(f"reading bytes [{offset}, {offset + length}) of {self._display!r} failed: "
                               f"{exc}") from None
        if len(data) > length:
            raise StorageError(f"reading bytes [{offset}, {offset + length}) of {self._display!r} failed: the "
                               f"server answered with {len(data)} bytes")
        return data

    def read_into(self, offset: int, out: memoryview) -> int:
        length = min(len(out), self.size - offset)
        if length <= 0:
            return 0
        try:
            return self._download(offset, length).readinto(_MemoryWriter(out[:length]))
        except (*_errors(), ValueError) as exc:
            if isinstance(exc, RcfmtError):
                raise
            raise StorageError(f"reading bytes [{offset}, {offset + length}) of {self._display!r} failed: "
                               f"{exc}") from None

    def close(self) -> None:
        self._closed = True


class BlobSink(ByteSink):
    """A file written as a block blob: blocks of :data:`BLOCK_BYTES` are staged as the
    data comes (:data:`BLOCKS_IN_FLIGHT` at once), and ``commit()`` commits their list,
    which makes the whole blob appear at once (replacing what was there); a file of one
    block or less is one upload at the commit. Staged blocks are invisible, so nothing
    is at the path before ``commit()``; ``abort()`` commits nothing (the service
    discards uncommitted blocks after a week)."""

    def __init__(self, uri: str, *, check_directory: bool = True):
        self.path = uri
        self._client = _blob(uri)
        if check_directory and kind(uri) == "dir":  # (a dataset's new data files skip the requests)
            raise DirectoryError(uri, writing=True)
        self._tag = uuid.uuid4().hex[:16]  # block ids of this writer only (ids are per blob name)
        self._ids: list[str] = []
        self._buffer = bytearray()
        self._pending: list = []
        self._pool = None
        self._done = False

    def _stage(self, chunk: bytes) -> None:
        block_id = f"{self._tag}-{len(self._ids):08d}"  # (the library base64-encodes it)
        self._ids.append(block_id)
        if self._pool is None:
            self._pool = thread_pool(BLOCKS_IN_FLIGHT, "rcfmt-azure-block")
        self._pending.append(self._pool.submit(self._client.stage_block, block_id, chunk, length=len(chunk),
                                            **_call_options()))
        if len(self._pending) >= BLOCKS_IN_FLIGHT:
            self._wait(self._pending.pop(0))

    def _wait(self, future) -> None:
        try:
            future.result()
        except _errors() as exc:
            raise StorageError(f"writing {self.path!r} failed: {exc}") from None

    def write(self, data) -> None:
        self._buffer += memoryview(data).cast("B")  # (bytes, or numpy arrays: not their elementwise +)
        while len(self._buffer) >= BLOCK_BYTES:
            chunk = bytes(self._buffer[:BLOCK_BYTES])
            del self._buffer[:BLOCK_BYTES]
            self._stage(chunk)

    def commit(self) -> None:
        try:
            if not self._ids:  # a small file: one upload (Put Blob replaces the blob whole, at once)
                data, self._buffer = bytes(self._buffer), bytearray()
                try:
                    self._client.upload_blob(data, overwrite=True, length=len(data), **_call_options())
                except _errors() as exc:
                    raise StorageError(f"writing {self.path!r} failed: {exc}") from None
                return
            if self._buffer:
                self._stage(bytes(self._buffer))
                self._buffer = bytearray()
            while self._pending:
                self._wait(self._pending.pop(0))
            try:
                self._client.commit_block_list(self._ids, **_call_options())
            except _errors() as exc:
                raise StorageError(f"writing {self.path!r} failed: {exc}") from None
        finally:
            self._close()

    def abort(self) -> None:
        for future in self._pending:
            future.cancel()
        self._pending = []
        self._buffer = bytearray()
        self._close()

    def _close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def create_if_absent(uri: str, data: bytes) -> bool:
    """Upload ``data`` as ``uri`` unless a blob has that name (``If-None-Match: *``):
    True if created, False if the service refused because it exists."""
    from azure.core.exceptions import ResourceExistsError, ResourceModifiedError

    try:
        _blob(uri).upload_blob(data, overwrite=False, length=len(data), **_call_options())
    except (ResourceExistsError, ResourceModifiedError):
        return False
    except _errors() as exc:  # after the library's own retries
        raise StorageError(str(exc)) from None
    return True


def identity(uri: str) -> tuple:
    """Which store ``uri`` is read from under the settings in force: its account and endpoint."""
    s = settings(split_uri(uri)[0])
    return "azure", s.account, s.account_url


def open(uri: str, size: int | None = None, tail: int = 1 << 20) -> BlobSource:  # noqa: A001 (the store protocol)
    """The blob ``uri`` for reading (:class:`BlobSource`; ``tail`` is not used: the size
    comes from the blob's properties)."""
    return BlobSource(uri, size)


def read_object(uri: str, limit: int | None = None) -> bytes | None:
    """The blob's bytes (its first ``limit`` at most); None if it does not exist."""
    from azure.core.exceptions import ResourceNotFoundError

    ranged = {} if limit is None else {"offset": 0, "length": max(limit, 1)}
    try:
        return _blob(uri).download_blob(**_call_options(), **ranged).readall()
    except ResourceNotFoundError:
        return None
    except _errors() as exc:
        raise StorageError(str(exc)) from None


def size(uri: str) -> int | None:
    """Bytes of the blob ``uri`` (one properties request); None if it does not exist."""
    from azure.core.exceptions import ResourceNotFoundError

    try:
        return int(_blob(uri).get_blob_properties(**_call_options()).size)
    except ResourceNotFoundError:
        return None
    except _errors() as exc:
        raise StorageError(f"looking up {uri!r} failed: {exc}") from None


def _container_client(uri: str):
    account, container, path = split_uri(uri)
    return _service(settings(account)).get_container_client(container), path


def kind(uri: str) -> str | None:
    """"file", "dir" (a prefix of blobs) or None (nothing there) for ``uri``."""
    from azure.core.exceptions import ResourceNotFoundError

    client, path = _container_client(uri)
    try:
        if path:
            try:
                client.get_blob_client(path).get_blob_properties(**_call_options())
                return "file"
            except ResourceNotFoundError:
                pass
        below = next(iter(client.list_blobs(name_starts_with=f"{path}/" if path else None, results_per_page=1,
                                            **_call_options())), None)
    except ResourceNotFoundError:  # no such container
        return None
    except _errors() as exc:
        raise StorageError(f"looking up {uri!r} failed: {exc}") from None
    return "dir" if below is not None else None


def entries(uri: str) -> list:
    """The ``pyarrow.fs.FileInfo`` of each entry directly below ``uri`` (blobs, and
    prefixes as directories); empty if there is none."""
    import pyarrow.fs as pafs
    from azure.core.exceptions import ResourceNotFoundError

    client, path = _container_client(uri)
    prefix = f"{path}/" if path else ""
    out = []
    try:
        for item in client.walk_blobs(name_starts_with=prefix or None, delimiter="/", **_call_options()):
            name = item.name[len(prefix):]
            if name.endswith("/"):
                out.append(pafs.FileInfo(f"{path}/{name.rstrip('/')}".lstrip("/"), pafs.FileType.Directory))
            elif name:
                out.append(pafs.FileInfo(item.name, pafs.FileType.File, size=item.size, mtime=item.last_modified))
    except ResourceNotFoundError:
        return []
    except _errors() as exc:
        raise StorageError(f"listing {uri!r} failed: {exc}") from None
    return out


def tree(uri: str) -> list[tuple[str, float]]:
    """Every blob below ``uri``: ``(name relative to it, modification time in seconds
    since the epoch)``."""
    from azure.core.exceptions import ResourceNotFoundError

    client, path = _container_client(uri)
    prefix = f"{path}/" if path else ""
    try:
        return [(b.name[len(prefix):], b.last_modified.timestamp())
                for b in client.list_blobs(name_starts_with=prefix or None, **_call_options())]
    except ResourceNotFoundError:
        return []
    except _errors() as exc:
        raise StorageError(f"listing {uri!r} failed: {exc}") from None


def delete(uri: str) -> None:
    """Delete the blob ``uri``; a missing one is no error."""
    from azure.core.exceptions import ResourceNotFoundError

    try:
        _blob(uri).delete_blob(**_call_options())
    except ResourceNotFoundError:
        pass
    except _errors() as exc:
        raise StorageError(f"deleting {uri!r} failed: {exc}") from None
