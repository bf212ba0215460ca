"""Files of a ``pyarrow.fs`` filesystem (and of fsspec ones, through pyarrow's adapter).

``pyarrow.fs`` is the primary layer for object stores: the same C++ clients pyarrow and
Spark's Arrow path use, with ranged reads that release the GIL. It reads where a
store's own client library is not installed, lists and writes S3, GCS and HDFS, and
serves every path given with an explicit ``filesystem=``. Which filesystem a URI is
on is :func:`rcfmt.storage.registry.from_uri`'s question.
"""
from __future__ import annotations

import threading

from ..errors import InvalidOptionError, RcfmtError
from .base import ByteSink, ByteSource, DirectoryError, client_errors, storage_error, tmp_name

__all__ = ["ArrowFile", "ArrowSink", "as_arrow_filesystem", "store_identity", "kind", "tree", "entries", "size",
           "read_whole"]


class ArrowFile(ByteSource):
    """A file of a ``pyarrow.fs`` filesystem (object stores: one ranged GET per read).

    Opening asks the server for the size (the client's HEAD) unless ``size`` is given:
    then the object is opened only at the first read, so a reader served from a cache
    makes no request at all."""

    remote = True

    def __init__(self, filesystem, path: str, display: str, size: int | None = None):
        self._filesystem, self._path, self._display = filesystem, path, display
        self.identity = store_identity(filesystem)
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
            except client_errors() as exc:
                try:
                    found = self._filesystem.get_file_info(self._path).type
                except client_errors():
                    found = None
                if found == pafs.FileType.NotFound:
                    raise FileNotFoundError(f"no such file: {self._display!r}") from None
                if found == pafs.FileType.Directory:
                    raise DirectoryError(self._display) from None
                raise storage_error(exc, "opening", self._display) from exc
            return self._file

    def read_at(self, offset: int, length: int) -> bytes:
        f = self._open()
        try:
            data = f.read_at(length, offset)
        except client_errors() as exc:
            raise storage_error(exc, f"reading bytes [{offset}, {offset + length}) of", self._display) from exc
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


def store_identity(filesystem) -> tuple:
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


def as_arrow_filesystem(filesystem):
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


class ArrowSink(ByteSink):
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
            found = filesystem.get_file_info(self._target).type
        except client_errors() as exc:
            raise storage_error(exc, "writing", display) from exc
        if found == pafs.FileType.Directory:
            raise DirectoryError(display, writing=True)
        if atomic:
            self._tmp = f"{parent}/{tmp_name(base)}" if parent else tmp_name(base)
        else:
            self._tmp = self._target
        try:
            self._stream = filesystem.open_output_stream(self._tmp, compression=None)
        except client_errors() as exc:
            raise storage_error(exc, "writing", display) from exc

    def write(self, data) -> None:
        try:
            self._stream.write(data)
        except client_errors() as exc:
            raise storage_error(exc, "writing", self.path) from exc

    def commit(self) -> None:
        try:
            self._stream.close()  # completes the upload
            if self._tmp != self._target:
                self._fs.move(self._tmp, self._target)
        except client_errors() as exc:
            raise storage_error(exc, "writing", self.path) from exc

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


def kind(filesystem, inner: str, display: str) -> str | None:
    """"file", "dir" or None (nothing there) for the path ``inner`` of ``filesystem``."""
    import pyarrow.fs as pafs

    try:
        found = filesystem.get_file_info(inner).type
    except client_errors() as exc:
        raise storage_error(exc, "looking up", display) from exc
    if found == pafs.FileType.File:
        return "file"
    if found == pafs.FileType.Directory:
        return "dir"
    return None


def tree(filesystem, inner: str, display: str) -> list[tuple[str, float]]:
    """Every file below ``inner``: ``(path relative to it, modification time in seconds
    since the epoch)``."""
    import pyarrow.fs as pafs

    inner = inner.rstrip("/")
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(inner, recursive=True, allow_not_found=True))
    except client_errors() as exc:
        raise storage_error(exc, "listing", display) from exc
    out = []
    for info in infos:
        if info.type == pafs.FileType.File:
            rel = info.path[len(inner):].lstrip("/")
            out.append((rel, info.mtime.timestamp() if info.mtime is not None else 0.0))
    return out


def entries(filesystem, inner: str, display: str) -> list:
    """The ``pyarrow.fs.FileInfo`` of each entry of the directory ``inner`` (one listing
    request); empty if it does not exist."""
    import pyarrow.fs as pafs

    try:
        return filesystem.get_file_info(pafs.FileSelector(inner, allow_not_found=True))
    except client_errors() as exc:
        raise storage_error(exc, "listing", display) from exc


def size(filesystem, inner: str, display: str) -> int | None:
    """Bytes of the file ``inner`` (one metadata request); None if there is none."""
    import pyarrow.fs as pafs

    try:
        info = filesystem.get_file_info(inner)
    except client_errors() as exc:
        raise storage_error(exc, "looking up", display) from exc
    return info.size if info.type == pafs.FileType.File else None


def read_whole(filesystem, inner: str, display: str, limit: int | None = None) -> bytes | None:
    """The bytes of the small file ``inner`` (its first ``limit`` at most); None if there is none."""
    try:
        with filesystem.open_input_stream(inner) as f:
            return f.read() if limit is None else f.read(limit)
    except FileNotFoundError:
        return None
    except client_errors() as exc:
        raise storage_error(exc, "reading", display) from exc
