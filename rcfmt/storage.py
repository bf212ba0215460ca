"""Where files and datasets live: what a path argument may be, and reading byte ranges.

Reading a single file (``open``, ``read_table``, scans) takes a local path
(``str`` or ``os.PathLike``), a ``file://`` URI, an object-store URI that
``pyarrow.fs`` understands (``s3://``, ``gs://``, ``hdfs://``; credentials and
endpoints from the environment, e.g. ``AWS_ENDPOINT_URL``, or the URI's query), an
Azure URI (``abfs[s]://container@account.dfs.core.windows.net/...``, ``az://...``), or
a path together with a ``filesystem=`` (a ``pyarrow.fs.FileSystem``, or an fsspec
filesystem, adapted through ``pyarrow.fs.PyFileSystem(FSSpecHandler(...))``).
``pyarrow.fs`` is the primary layer: the same C++ clients pyarrow and Spark's Arrow
path use, with ranged reads that release the GIL; fsspec filesystems reach it through
pyarrow's adapter. (Where the store's own client library is installed, files are
read through it: ``s3://`` through boto3, whose suffix-range GET opens a file in one
request (:mod:`rcfmt.s3_source`); ``gs://`` through google-cloud-storage, which sends
ranged GETs only (:mod:`rcfmt.gcs_source`); Azure blobs through azure-storage-blob,
with bounded retries and timeouts (:mod:`rcfmt.azure_store`).) Local files keep their
fast path (``os.pread`` on one descriptor).

Single files are written to the same places (:func:`open_output`): streamed to a
hidden temporary object and moved over the target when complete, so a reader never
sees part of a file.

Datasets are read from object-store URIs too (:func:`is_remote`, :func:`remote_kind`,
:func:`list_sizes`: the index versions are listed, the index and the data files read
through the same layer), and written, optimized and vacuumed on S3, GCS and Azure, whose
conditional creates commit a version (:func:`check_commit_support`,
:func:`create_if_absent`). On other stores those are refused with
:class:`~rcfmt.errors.UnsupportedError` before anything is read or created; operations
that take local paths only say so through :func:`local_path` -- a URI is never taken for a relative local path (which would
quietly write ``./s3:/bucket/...``).

S3 clients take their endpoint, region and credentials from the environment
(``AWS_*``) unless :func:`s3_settings` gives them (the Spark data source's options).
GCS clients take Google's default credentials, or reach the emulator that
``STORAGE_EMULATOR_HOST`` names anonymously (as google-cloud-storage and gcsfs do).
Azure clients take ``AZURE_STORAGE_*`` unless :func:`rcfmt.azure_store.azure_settings`
gives their settings.
"""
from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
from urllib.parse import unquote, urlsplit

from .errors import InvalidOptionError, RcfmtError, StorageError, UnsupportedError

__all__ = ["local_path", "open_input", "open_output", "object_size", "read_object", "replace_object",
           "ByteSource", "ByteSink", "is_remote", "remote_kind",
           "list_names", "list_sizes", "list_tree", "delete_files", "check_commit_support", "create_if_absent",
           "s3_settings", "check_s3_settings", "S3_SETTINGS", "scheme_of"]

_URI = re.compile(r"\A([A-Za-z][A-Za-z0-9+.\-]*)://")


def _fspath(where) -> str:
    try:
        path = os.fspath(where)
    except TypeError:
        raise InvalidOptionError(f"expected a path (str or os.PathLike), got {type(where).__name__}") from None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not path:
        raise InvalidOptionError("empty path")
    return path


def _file_uri(path: str) -> str:
    parts = urlsplit(path)
    if parts.netloc not in ("", "localhost"):
        raise UnsupportedError(f"{path!r}: file:// URIs with a host ({parts.netloc!r}) are not supported")
    if not parts.path:
        raise InvalidOptionError(f"{path!r} names no file")
    return os.path.abspath(unquote(parts.path))


def local_path(where) -> str:
    """The local filesystem path ``where`` names: a ``str`` or ``os.PathLike`` as given,
    or the absolute path of a ``file://`` URI. Raises :class:`UnsupportedError` for other
    URIs and :class:`InvalidOptionError` for what is not a path at all."""
    path = _fspath(where)
    m = _URI.match(path)
    if m is None:
        return path
    scheme = m.group(1).lower()
    if scheme != "file":
        raise UnsupportedError(
            f"{path!r}: {scheme}:// URIs are not supported here; rcfmt writes files and reads and writes datasets "
            f"at local paths and file:// URIs (single files can be read from object storage). "
            f"Nothing was read or written.")
    return _file_uri(path)


# ------------------------------------------------------------------ reading byte ranges
def _client_errors() -> tuple:
    """What pyarrow's filesystem clients raise on failure: OSError, and for some (GCS
    credentials that cannot be loaded) a bare ArrowException."""
    import pyarrow as pa

    return OSError, pa.ArrowException


def _storage_error(exc: Exception, what: str, where: str) -> OSError:
    """A client's I/O failure (after its own retries) as a StorageError naming the file;
    FileNotFoundError (and rcfmt's own errors) pass through unchanged."""
    if isinstance(exc, (FileNotFoundError, RcfmtError)):
        return exc
    return StorageError(f"{what} {where!r} failed: {exc}")



class ByteSource:
    """Positional reads of one file: ``size``, ``read_at(offset, length)`` (thread-safe;
    may return fewer bytes only at the end of the file), ``close()``; ``remote``: each
    read is a request to a server (readers then save reads)."""

    size: int
    remote = False
    #: which store the path is in (part of what names an object in caches)
    identity: tuple = ("local",)

    def read_at(self, offset: int, length: int) -> bytes:  # pragma: no cover - interface
        raise NotImplementedError

    def read_into(self, offset: int, out: memoryview) -> int:
        """Read ``len(out)`` bytes at ``offset`` into ``out``; the number of bytes read
        (fewer only at the end of the file)."""
        data = self.read_at(offset, len(out))
        out[: len(data)] = data
        return len(data)

    def close(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class DirectoryError(RcfmtError, IsADirectoryError):
    """A path given as a file names a directory (a dataset, read with ``rcfmt.dataset()``;
    ``writing``: the target of a file write, refused before anything is written)."""

    def __init__(self, path: str, writing: bool = False):
        hint = ("name a file, or write a dataset there with rcfmt.write_dataset()" if writing
                else "use rcfmt.dataset() for directories")
        super().__init__(f"{path} is a directory; {hint}")


class _LocalFile(ByteSource):
    """A local file: one descriptor, ``os.pread`` (releases the GIL)."""

    def __init__(self, path: str):
        try:
            self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except IsADirectoryError:
            raise DirectoryError(path) from None
        if stat.S_ISDIR(os.fstat(self._fd).st_mode):  # Linux opens directories read-only
            self.close()
            raise DirectoryError(path)
        self.size = os.fstat(self._fd).st_size

    def read_at(self, offset: int, length: int) -> bytes:
        if self._fd is None:
            raise RcfmtError("file is closed")
        return os.pread(self._fd, length, offset)

    def read_into(self, offset: int, out: memoryview) -> int:
        if self._fd is None:
            raise RcfmtError("file is closed")
        done = 0
        while done < len(out):  # preadv may return short counts (signals); 0 is the end of the file
            n = os.preadv(self._fd, [out[done:]], offset + done)
            if n == 0:
                break
            done += n
        return done

    def close(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)


class _ArrowFile(ByteSource):
    """A file of a ``pyarrow.fs`` filesystem (object stores: one ranged GET per read).

    Opening asks the server for the size (the client's HEAD) unless ``size`` is given:
    then the object is opened only at the first read, so a reader served from a cache
    makes no request at all."""

    remote = True

    def __init__(self, filesystem, path: str, display: str, size: int | None = None):
        self._filesystem, self._path, self._display = filesystem, path, display
        self.identity = _store_identity(filesystem)
        self._file = None
        self._closed = False
        self._open_lock = threading.Lock()
        if size is None:
            self.size = self._open().size()
        else:
            self.size = int(size)

    def _open(self):
        """The client's file, opened on first use (one request: its HEAD); what a failure
        means is asked only then."""
        import pyarrow.fs as pafs

        with self._open_lock:
            if self._closed:
                raise RcfmtError("file is closed")
            if self._file is not None:
                return self._file
            try:
                self._file = self._filesystem.open_input_file(self._path)
            except _client_errors() as exc:
                try:
                    kind = self._filesystem.get_file_info(self._path).type
                except _client_errors():
                    kind = None
                if kind == pafs.FileType.NotFound:
                    raise FileNotFoundError(f"no such file: {self._display!r}") from None
                if kind == pafs.FileType.Directory:
                    raise DirectoryError(self._display) from None
                raise _storage_error(exc, "opening", self._display) from exc
            return self._file

    def read_at(self, offset: int, length: int) -> bytes:
        f = self._open()
        try:
            data = f.read_at(length, offset)
        except _client_errors() as exc:
            raise _storage_error(exc, f"reading bytes [{offset}, {offset + length}) of", self._display) from exc
        return data if isinstance(data, bytes) else data.to_pybytes()

    def close(self) -> None:
        lock = getattr(self, "_open_lock", None)
        if lock is None:
            return
        with lock:
            self._closed = True
            f, self._file = self._file, None
        if f is not None:
            f.close()


def _store_identity(filesystem) -> tuple:
    """The filesystem's kind and endpoint: two stores with equal paths are told apart
    (an S3 bucket on AWS and one of the same name on a local server)."""
    try:
        kwargs = filesystem.__reduce__()[1][0]
    except (AttributeError, IndexError, KeyError, TypeError):
        kwargs = None
    name = getattr(filesystem, "type_name", type(filesystem).__name__)
    if not isinstance(kwargs, dict):
        return (name, id(filesystem))  # unknown kind: cached per filesystem object
    if "account_name" in kwargs:  # Azure: the account and its service's host
        return (name, str(kwargs["account_name"]), str(kwargs.get("blob_storage_authority") or ""))
    return (name, str(kwargs.get("endpoint_override") or ""), str(kwargs.get("scheme") or ""))


def _arrow_filesystem(filesystem):
    """``filesystem`` as a ``pyarrow.fs.FileSystem`` (fsspec ones through pyarrow's adapter)."""
    import pyarrow.fs as pafs

    if isinstance(filesystem, pafs.FileSystem):
        return filesystem
    try:
        from fsspec import AbstractFileSystem
    except ImportError:  # pragma: no cover - fsspec not installed
        AbstractFileSystem = ()
    if AbstractFileSystem and isinstance(filesystem, AbstractFileSystem):
        return pafs.PyFileSystem(pafs.FSSpecHandler(filesystem))
    raise InvalidOptionError(f"filesystem must be a pyarrow.fs.FileSystem or an fsspec filesystem, "
                             f"got {type(filesystem).__name__}")


def open_input(where, filesystem=None, size: int | None = None, tail: int = 1 << 20) -> tuple[str, ByteSource]:
    """``(path to show in messages, source)`` for reading the single file ``where``;
    ``size``, when the caller knows it, saves an object store the request that asks.
    Sources that learn the size with a read of the object's last ``tail`` bytes (S3
    through boto3: one request) hold those in ``prefetched``."""
    path = _fspath(where)
    if filesystem is not None:
        return path, _ArrowFile(_arrow_filesystem(filesystem), path, path, size)
    m = _URI.match(path)
    if m is None:
        return path, _LocalFile(path)
    if m.group(1).lower() == "file":
        local = _file_uri(path)
        return local, _LocalFile(local)
    if scheme_of(path) == "gs" and "?" not in path:
        from . import gcs_source  # ranged GETs only (pyarrow's client adds a whole-object GET)

        if gcs_source.available():
            parts = urlsplit(path)
            return path, gcs_source.GcsObject(parts.netloc, unquote(parts.path).lstrip("/"), path, size)
    if scheme_of(path) == "s3" and "?" not in path:
        from . import s3_source  # an open is one request (pyarrow's client adds a HEAD)

        if s3_source.available():
            bucket, key = s3_source.object_of(path)
            return path, s3_source.S3Object(bucket, key, path, size, tail)
    if _azure_sdk(path):  # bounded retries and timeouts (pyarrow's client takes none)
        from . import azure_store

        return path, azure_store.BlobSource(path, size)
    fs, inner = _from_uri(path)
    return path, _ArrowFile(fs, inner, path, size)


# ------------------------------------------------------------------ writing one file
class ByteSink:
    """Where one file being written goes: ``write(data)`` appends, ``commit()`` makes the
    whole file appear at its path at once (replacing what was there), ``abort()``
    discards it. Until ``commit()`` returns nothing is at the path, so no reader can take
    a partial file for a whole one; a crash leaves at most a hidden ``.*.rcfmt-tmp``
    beside it."""

    path: str  # for messages

    def write(self, data) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def commit(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def abort(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError


def _tmp_name(base: str) -> str:
    import uuid

    return f".{base}.{uuid.uuid4().hex[:12]}.rcfmt-tmp"


class _LocalSink(ByteSink):
    """A temporary file beside the target, fsync'd and renamed over it."""

    def __init__(self, path: str):
        self.path = path
        if os.path.isdir(path):  # (os.replace would fail only once the whole file is written)
            raise DirectoryError(path, writing=True)
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise InvalidOptionError(f"directory {directory!r} does not exist")
        self.tmp_path = os.path.join(directory, _tmp_name(os.path.basename(path)))
        self._file = open(self.tmp_path, "wb")

    def write(self, data) -> None:
        self._file.write(data)

    def commit(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        os.replace(self.tmp_path, self.path)

    def abort(self) -> None:
        try:
            self._file.close()
        finally:
            try:
                os.unlink(self.tmp_path)
            except FileNotFoundError:
                pass


class _ArrowSink(ByteSink):
    """An object written through ``pyarrow.fs``: streamed to a temporary key beside the
    target (object stores upload it in parts as it grows, so the file is never held in
    memory whole), then moved over the target -- a server-side copy on object stores,
    which makes the object appear whole, and a rename on HDFS. ``abort()`` deletes the
    temporary object (pyarrow's streams cannot abandon an upload, only complete it).

    With ``atomic=False`` the object is streamed to the target itself (for files no
    reader looks at until something else names them: a dataset's data files before
    their commit) and ``abort()`` deletes it."""

    def __init__(self, filesystem, path: str, display: str, atomic: bool = True):
        import pyarrow.fs as pafs

        self.path = display
        self._fs = filesystem
        self._target = path.rstrip("/")
        parent, _, base = self._target.rpartition("/")
        if not base:
            raise InvalidOptionError(f"{display!r} names no file")
        try:
            kind = filesystem.get_file_info(self._target).type
        except _client_errors() as exc:
            raise _storage_error(exc, "writing", display) from exc
        if kind == pafs.FileType.Directory:
            raise DirectoryError(display, writing=True)
        if atomic:
            self._tmp = f"{parent}/{_tmp_name(base)}" if parent else _tmp_name(base)
        else:
            self._tmp = self._target
        try:
            self._stream = filesystem.open_output_stream(self._tmp, compression=None)
        except _client_errors() as exc:
            raise _storage_error(exc, "writing", display) from exc

    def write(self, data) -> None:
        try:
            self._stream.write(data)
        except _client_errors() as exc:
            raise _storage_error(exc, "writing", self.path) from exc

    def commit(self) -> None:
        try:
            self._stream.close()  # completes the upload
            if self._tmp != self._target:
                self._fs.move(self._tmp, self._target)
        except _client_errors() as exc:
            raise _storage_error(exc, "writing", self.path) from exc

    def abort(self) -> None:
        try:
            if not self._stream.closed:
                self._stream.close()
        except Exception:  # the upload itself failed: nothing to delete but what completed
            pass
        try:
            self._fs.delete_file(self._tmp)
        except (FileNotFoundError, OSError):
            pass


def open_output(where, filesystem=None, *, atomic: bool = True) -> ByteSink:
    """A :class:`ByteSink` for writing the single file ``where``: a local path, a
    ``file://`` URI, an object-store URI, or a path of ``filesystem`` (``pyarrow.fs`` or
    fsspec). Bad paths raise before anything is created. ``atomic=False`` (object
    stores only) streams straight to the target, for files nothing names yet."""
    path = _fspath(where)
    if filesystem is not None:
        return _ArrowSink(_arrow_filesystem(filesystem), path, path, atomic)
    m = _URI.match(path)
    if m is None:
        return _LocalSink(path)
    if m.group(1).lower() == "file":
        return _LocalSink(_file_uri(path))
    if scheme_of(path) == "abfs":  # block blobs appear whole when committed: atomic either way
        from . import azure_store

        return azure_store.BlobSink(path, check_directory=atomic)
    fs, inner = _from_uri(path)
    return _ArrowSink(fs, inner, path, atomic)


def delete_files(paths) -> None:
    """Delete files (local paths or object-store URIs) that may not exist; best effort."""
    for p in paths:
        try:
            if is_remote(p) and _azure_sdk(p):
                from . import azure_store

                azure_store.delete(p)
            elif is_remote(p):
                fs, inner = _from_uri(p)
                fs.delete_file(inner)
            else:
                os.unlink(p)
        except (*_client_errors(), StorageError):
            pass


# ------------------------------------------------------------------ create-if-absent (commits)
#: object stores whose conditional create rcfmt uses to commit dataset versions
COMMIT_SCHEMES = ("s3", "gs", "abfs")
#: the client each of them is committed with: (module, its package, the extra that installs it)
_COMMIT_CLIENTS = {"s3": ("boto3", "boto3", "s3"), "gs": ("google.cloud.storage", "google-cloud-storage", "gcs"),
                   "abfs": ("azure.storage.blob", "azure-storage-blob", "azure")}
#: other spellings of the stores' schemes
_SCHEME_ALIASES = {"gcs": "gs", "abfss": "abfs", "az": "abfs"}


def scheme_of(uri: str) -> str:
    """The object store a URI names, lower case, in one spelling per store (``gcs://``
    is ``gs``; ``abfss://`` and ``az://`` are ``abfs``)."""
    scheme = _URI.match(uri).group(1).lower()
    return _SCHEME_ALIASES.get(scheme, scheme)


def check_commit_support(uri: str) -> None:
    """UnsupportedError, before anything is written, unless rcfmt can commit dataset
    versions at ``uri`` without risking a lost update: an atomic create-if-absent of
    the version object. S3 (and S3-compatible servers that honour it) has one, a PUT
    with ``If-None-Match: *``, made through boto3; GCS an upload with
    ``ifGenerationMatch=0``, made through google-cloud-storage; Azure an upload with
    ``If-None-Match: *``, made through azure-storage-blob."""
    scheme = scheme_of(uri)
    if scheme not in COMMIT_SCHEMES:
        raise UnsupportedError(
            f"{uri!r}: writing datasets to {scheme}:// is not supported yet. rcfmt commits a dataset version with "
            f"an atomic create-if-absent of its index object and implements it for s3://, gs:// and abfs:// so far. "
            f"Nothing was written. Alternatives: a local, s3://, gs:// or abfs:// dataset path, or single files "
            f"with write_table.")
    module, package, extra = _COMMIT_CLIENTS[scheme]
    try:
        __import__(module)
    except ImportError:
        raise UnsupportedError(f"{uri!r}: committing a dataset on {scheme}:// needs {package} "
                               f"(pip install 'rcfmt[{extra}]'); nothing was written") from None


def create_if_absent(uri: str, data: bytes) -> bool:
    """Create the object ``uri`` holding ``data`` unless it exists: True if created,
    False if it existed (or another writer's create of it is in flight). Atomic on the
    server; the caller checked :func:`check_commit_support`.

    A create the server refuses is told apart from one of ours whose answer was lost and
    retried by the client (the retry finds our own object): the object is read back and
    compared with ``data`` -- a commit is never taken for lost when it landed."""
    scheme = scheme_of(uri)
    if scheme == "abfs":
        from . import azure_store

        def create(_, __, data):
            return azure_store.create_if_absent(uri, data)

        def read(_, __):
            return azure_store.read_blob(uri)
    else:
        create, read = (_gcs_create, _gcs_read) if scheme == "gs" else (_s3_create, _s3_read)
    parts = urlsplit(uri)
    bucket, key = parts.netloc, unquote(parts.path).lstrip("/")
    try:
        if create(bucket, key, data):
            return True
        return read(bucket, key) == data
    except StorageError as exc:
        raise StorageError(f"committing {uri!r} failed: {exc}") from None



# ------------------------------------------------------------------ small objects replaced in place (version hints)
def object_size(where) -> int | None:
    """Bytes of the single file or object ``where``; None if there is none. One
    ``stat`` locally, one metadata request on S3 (HEAD), GCS and Azure."""
    path = _fspath(where)
    if not is_remote(path):
        try:
            st = os.stat(local_path(path))
        except (FileNotFoundError, NotADirectoryError):
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None
    scheme = scheme_of(path)
    parts = urlsplit(path)
    bucket, key = parts.netloc, unquote(parts.path).lstrip("/")
    if scheme == "s3" and "?" not in path and _has("boto3"):
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return int(_s3_client().head_object(Bucket=bucket, Key=key)["ContentLength"])
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code")) in ("404", "NoSuchKey", "NotFound"):
                return None
            raise StorageError(f"looking up {path!r} failed: {exc}") from None
        except BotoCoreError as exc:
            raise StorageError(f"looking up {path!r} failed: {exc}") from None
    if scheme == "gs" and "?" not in path and _has("google.cloud.storage"):
        try:
            with _gcs_client() as client:
                blob = client.bucket(bucket).get_blob(key)
        except _gcs_errors() as exc:
            raise StorageError(f"looking up {path!r} failed: {exc}") from None
        return None if blob is None else int(blob.size)
    if _azure_sdk(path):
        from . import azure_store

        return azure_store.size(path)
    import pyarrow.fs as pafs

    fs, inner = _from_uri(path)
    try:
        info = fs.get_file_info(inner)
    except _client_errors() as exc:
        raise _storage_error(exc, "looking up", path) from exc
    return info.size if info.type == pafs.FileType.File else None


def read_object(where) -> bytes | None:
    """The bytes of the small file or object ``where`` (one request); None if there is none."""
    path = _fspath(where)
    if not is_remote(path):
        try:
            with open(local_path(path), "rb") as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
    scheme = scheme_of(path)
    parts = urlsplit(path)
    bucket, key = parts.netloc, unquote(parts.path).lstrip("/")
    try:
        if scheme == "s3" and "?" not in path and _has("boto3"):
            return _s3_read(bucket, key)
        if scheme == "gs" and "?" not in path and _has("google.cloud.storage"):
            return _gcs_read(bucket, key)
    except StorageError as exc:
        raise StorageError(f"reading {path!r} failed: {exc}") from None
    if _azure_sdk(path):
        from . import azure_store

        return azure_store.read_blob(path)
    fs, inner = _from_uri(path)
    try:
        with fs.open_input_stream(inner) as f:
            return f.read()
    except FileNotFoundError:
        return None
    except _client_errors() as exc:
        raise _storage_error(exc, "reading", path) from exc


def replace_object(where, data: bytes) -> None:
    """Write the small ``data`` as the file or object ``where``, replacing what is there,
    so that readers see the old bytes or the new ones, never a mix: locally a temporary
    file renamed over it (not fsync'd: for hints a crash may lose), on S3, GCS and Azure
    one unconditional upload."""
    path = _fspath(where)
    if not is_remote(path):
        path = local_path(path)
        tmp = os.path.join(os.path.dirname(path), _tmp_name(os.path.basename(path)))
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        return
    scheme = scheme_of(path)
    parts = urlsplit(path)
    bucket, key = parts.netloc, unquote(parts.path).lstrip("/")
    if scheme == "s3" and "?" not in path and _has("boto3"):
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            _s3_client().put_object(Bucket=bucket, Key=key, Body=data)
        except (BotoCoreError, ClientError) as exc:
            raise StorageError(f"writing {path!r} failed: {exc}") from None
        return
    if scheme == "gs" and "?" not in path and _has("google.cloud.storage"):
        try:
            with _gcs_client() as client:
                client.bucket(bucket).blob(key).upload_from_string(data, content_type="application/octet-stream")
        except _gcs_errors() as exc:
            raise StorageError(f"writing {path!r} failed: {exc}") from None
        return
    sink = open_output(path, atomic=False)  # (Azure: a block blob appears whole)
    try:
        sink.write(data)
        sink.commit()
    except BaseException:
        sink.abort()
        raise


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _s3_client():
    from . import s3_source

    return s3_source.client()


def _s3_create(bucket: str, key: str, data: bytes) -> bool:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        _s3_client().put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = exc.response.get("Error", {}).get("Code")
        if status in (409, 412) or code in ("PreconditionFailed", "ConditionalRequestConflict"):
            return False
        raise StorageError(str(exc)) from None
    except BotoCoreError as exc:  # connection failures, after boto3's own retries
        raise StorageError(str(exc)) from None
    return True


def _s3_read(bucket: str, key: str) -> bytes | None:
    """The object's bytes; None if it does not exist (a create still in flight)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return _s3_client().get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return None
        raise StorageError(str(exc)) from None
    except BotoCoreError as exc:
        raise StorageError(str(exc)) from None


_GCS_IDLE: dict = {}  # environment -> google-cloud-storage clients not in use (their HTTP sessions stay warm)


def _gcs_environment() -> tuple:
    """What GCS clients read from the environment: the emulator and the credentials file
    (a client made under other values is not reused)."""
    return os.environ.get("STORAGE_EMULATOR_HOST") or None, os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")


_GCS_CREDENTIALS: dict = {}  # environment -> (credentials, project), found once per process
_GCS_AUTH_LOCK = threading.Lock()


def _gcs_credentials(environment: tuple) -> tuple:
    """Google's default credentials and project, looked up once per environment (a scan's
    new threads then make their clients without asking the metadata server or reading
    the key file again, and share one token)."""
    with _GCS_AUTH_LOCK:  # (threads starting together wait for the one lookup)
        found = _GCS_CREDENTIALS.get(environment)
        if found is None:
            import google.auth

            found = _GCS_CREDENTIALS[environment] = google.auth.default(
                scopes=["https://www.googleapis.com/auth/devstorage.read_write"])
    return found


@contextlib.contextmanager
def _gcs_client():
    """``with _gcs_client() as client:`` a google-cloud-storage client for this thread's
    exclusive use while the block runs (an HTTP session is not shared by threads), then
    kept for the next caller, so connections outlive the short-lived threads of a scan.
    The endpoint ``STORAGE_EMULATOR_HOST`` names (anonymously, as the library does), else
    Google's default credentials (:func:`_gcs_credentials`)."""
    from google.cloud import storage

    environment = _gcs_environment()
    with _LOCK:
        idle = _GCS_IDLE.setdefault(environment, [])
        client = idle.pop() if idle else None
    if client is None:
        if environment[0]:
            client = storage.Client()
        else:
            credentials, project = _gcs_credentials(environment)
            client = storage.Client(project=project, credentials=credentials)
    try:
        yield client
    finally:
        with _LOCK:
            _GCS_IDLE.setdefault(environment, []).append(client)


def _gcs_errors() -> tuple:
    import google.auth.exceptions
    import requests
    from google.api_core import exceptions

    return exceptions.GoogleAPIError, google.auth.exceptions.GoogleAuthError, requests.RequestException


def _gcs_create(bucket: str, key: str, data: bytes) -> bool:
    from google.api_core import exceptions

    try:
        # ifGenerationMatch=0: create only if no live object has the name (a 412 otherwise)
        with _gcs_client() as client:
            client.bucket(bucket).blob(key).upload_from_string(
                data, content_type="application/octet-stream", if_generation_match=0)
    except exceptions.PreconditionFailed:
        return False
    except _gcs_errors() as exc:  # after the library's own retries
        raise StorageError(str(exc)) from None
    return True


def _gcs_read(bucket: str, key: str) -> bytes | None:
    from google.api_core import exceptions

    try:
        with _gcs_client() as client:
            return client.bucket(bucket).blob(key).download_as_bytes()
    except exceptions.NotFound:
        return None
    except _gcs_errors() as exc:
        raise StorageError(str(exc)) from None


# ------------------------------------------------------------------ object-store URIs
def is_remote(where) -> bool:
    """Whether ``where`` is an object-store URI (a scheme other than ``file://``)."""
    if not isinstance(where, str):
        return False
    m = _URI.match(where)
    return m is not None and m.group(1).lower() != "file"


# ------------------------------------------------------------------ S3 client settings
#: the settings :func:`s3_settings` accepts
S3_SETTINGS = ("endpoint", "region", "access_key", "secret_key", "session_token")
_S3_SETTINGS: dict | None = None  # in force: they take precedence over the environment
_FILESYSTEMS: dict = {}  # one client per distinct settings
_LOCK = threading.Lock()


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
    global _S3_SETTINGS
    checked = check_s3_settings(settings) if settings else None
    with _LOCK:
        saved, _S3_SETTINGS = _S3_SETTINGS, checked
    try:
        yield
    finally:
        with _LOCK:
            _S3_SETTINGS = saved


def _endpoint_parts(endpoint: str) -> tuple[str, str]:
    """``(scheme, host[:port])`` of an endpoint written with or without a scheme (the
    Hadoop spelling ``fs.s3a.endpoint`` has none: https)."""
    if "://" in endpoint:
        scheme, rest = endpoint.split("://", 1)
        return scheme.lower(), rest.rstrip("/")
    return "https", endpoint.rstrip("/")


def _s3_filesystem(settings: dict):
    import pyarrow.fs as pafs

    key = tuple(sorted(settings.items()))
    with _LOCK:
        fs = _FILESYSTEMS.get(key)
        if fs is None:
            kwargs = {k: settings[k] for k in ("region", "access_key", "secret_key", "session_token") if k in settings}
            if "endpoint" in settings:
                kwargs["scheme"], kwargs["endpoint_override"] = _endpoint_parts(settings["endpoint"])
            fs = _FILESYSTEMS[key] = pafs.S3FileSystem(**kwargs)
        return fs


def _boto3_arguments(settings: dict | None) -> dict:
    if not settings:
        return {}
    out = {}
    if "endpoint" in settings:
        scheme, host = _endpoint_parts(settings["endpoint"])
        out["endpoint_url"] = f"{scheme}://{host}"
    for ours, theirs in (("region", "region_name"), ("access_key", "aws_access_key_id"),
                         ("secret_key", "aws_secret_access_key"), ("session_token", "aws_session_token")):
        if ours in settings:
            out[theirs] = settings[ours]
    return out


#: how long pyarrow's GCS client retries what it takes for transient (its own default
#: is 15 minutes: a machine without Google credentials would seem to hang that long)
GCS_RETRY_SECONDS = 60


def _gcs_filesystem():
    """pyarrow's GCS client: Google's default credentials, or the emulator at
    ``STORAGE_EMULATOR_HOST`` (the variable google-cloud-storage and gcsfs read;
    ``http://`` unless it names a scheme) without credentials. Transient failures are
    retried for :data:`GCS_RETRY_SECONDS`."""
    import datetime

    import pyarrow.fs as pafs

    environment = _gcs_environment()
    emulator = environment[0]
    kwargs = {"retry_time_limit": datetime.timedelta(seconds=GCS_RETRY_SECONDS)}
    if emulator:
        scheme, host = _endpoint_parts(emulator if "://" in emulator else f"http://{emulator}")
        kwargs.update(anonymous=True, scheme=scheme, endpoint_override=host)
    key = ("gs", environment, GCS_RETRY_SECONDS)
    with _LOCK:
        fs = _FILESYSTEMS.get(key)
        if fs is None:
            fs = _FILESYSTEMS[key] = pafs.GcsFileSystem(**kwargs)
        return fs


def _from_uri(uri: str):
    import pyarrow as pa
    import pyarrow.fs as pafs

    settings = _S3_SETTINGS
    if settings and uri[:5].lower() == "s3://":
        path = urlsplit(uri)
        return _s3_filesystem(settings), f"{path.netloc}{unquote(path.path)}".rstrip("/")
    if scheme_of(uri) == "gs" and "?" not in uri:  # (a query's options go to pyarrow's from_uri)
        path = urlsplit(uri)
        return _gcs_filesystem(), f"{path.netloc}{unquote(path.path)}".rstrip("/")
    if scheme_of(uri) == "abfs":
        from . import azure_store

        account, container, inner = azure_store.split_uri(uri)
        return azure_store.filesystem(azure_store.settings(account)), f"{container}/{inner}".rstrip("/")
    try:
        return pafs.FileSystem.from_uri(uri)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
        raise UnsupportedError(f"{uri!r}: {exc}") from None


def _azure_sdk(uri: str) -> bool:
    """Whether ``uri`` is an Azure blob that azure-storage-blob can reach (its bounded
    retries and timeouts: :mod:`rcfmt.azure_store`)."""
    if scheme_of(uri) != "abfs":
        return False
    from . import azure_store

    return azure_store.available()


def remote_kind(uri: str) -> str | None:
    """"file", "dir" or None (nothing there) for an object-store URI."""
    import pyarrow.fs as pafs

    if _azure_sdk(uri):
        from . import azure_store

        return azure_store.kind(uri)

    fs, inner = _from_uri(uri)
    try:
        kind = fs.get_file_info(inner).type
    except _client_errors() as exc:
        raise _storage_error(exc, "looking up", uri) from exc
    if kind == pafs.FileType.File:
        return "file"
    if kind == pafs.FileType.Directory:
        return "dir"
    return None


def list_tree(uri: str) -> list[tuple[str, float]]:
    """Every object below the object-store prefix ``uri``: ``(path relative to it,
    modification time in seconds since the epoch)``."""
    import pyarrow.fs as pafs

    if _azure_sdk(uri):
        from . import azure_store

        return azure_store.tree(uri)

    fs, inner = _from_uri(uri)
    inner = inner.rstrip("/")
    try:
        infos = fs.get_file_info(pafs.FileSelector(inner, recursive=True, allow_not_found=True))
    except _client_errors() as exc:
        raise _storage_error(exc, "listing", uri) from exc
    out = []
    for info in infos:
        if info.type == pafs.FileType.File:
            rel = info.path[len(inner):].lstrip("/")
            out.append((rel, info.mtime.timestamp() if info.mtime is not None else 0.0))
    return out


def _remote_entries(directory: str) -> list:
    """The ``pyarrow.fs.FileInfo`` of each entry of an object-store ``directory`` (one
    listing request); empty if it does not exist."""
    import pyarrow.fs as pafs

    if _azure_sdk(directory):
        from . import azure_store

        return azure_store.entries(directory)

    fs, inner = _from_uri(directory)
    try:
        return fs.get_file_info(pafs.FileSelector(inner, allow_not_found=True))
    except _client_errors() as exc:
        raise _storage_error(exc, "listing", directory) from exc


def list_names(directory: str) -> list[str]:
    """Names of the entries of ``directory`` (a local path or an object-store URI);
    empty if it does not exist."""
    if not is_remote(directory):
        try:
            return os.listdir(directory)
        except FileNotFoundError:
            return []
    return [info.base_name for info in _remote_entries(directory)]


def list_sizes(directory: str) -> dict[str, int]:
    """``{name: size}`` of the files in ``directory`` (a local path or an object-store
    URI; one listing request); empty if it does not exist."""
    if not is_remote(directory):
        try:
            with os.scandir(directory) as it:
                return {e.name: e.stat().st_size for e in it if e.is_file()}
        except FileNotFoundError:
            return {}
    import pyarrow.fs as pafs

    return {info.base_name: info.size for info in _remote_entries(directory) if info.type == pafs.FileType.File}
