"""What every store shares: the source and sink interfaces, the errors, and the store protocol.

:class:`ByteSource` reads byte ranges of one file, :class:`ByteSink` writes one file
that appears whole when committed; :func:`storage_error` turns a client's failure into
:class:`~rcfmt.errors.StorageError`; :class:`Store` is what :mod:`rcfmt.storage.registry`
asks of an object store's module (:mod:`~rcfmt.storage.s3`, :mod:`~rcfmt.storage.gcs`,
:mod:`~rcfmt.storage.azure`).
"""
from __future__ import annotations

import contextlib
import importlib
import threading
import uuid
from typing import Protocol

from ..errors import RcfmtError, StorageError

__all__ = ["ByteSource", "ByteSink", "DirectoryError", "Store", "ProcessSetting", "available", "client_errors",
           "storage_error", "tmp_name"]


class ByteSource:
    """Positional reads of one file: ``size``, ``read_at(offset, length)`` (thread-safe;
    may return fewer bytes only at the end of the file), ``close()``; ``remote``: each
    read is a request to a server (readers then save reads)."""

    size: int
    remote = False
    #: which store the path is in (part of what names an object in caches)
    identity: tuple = ("local",)
    #: what tells this file from another at its path and of its size, as opened (a local
    #: file's inode and modification time; None where the store reports nothing finer)
    version: tuple | None = None

    def read_at(self, offset: int, length: int) -> bytes:  # pragma: no cover - interface
        raise NotImplementedError

    def read_into(self, offset: int, out: memoryview) -> int:
        """Read ``len(out)`` bytes at ``offset`` into ``out``; the number of bytes read
        (fewer only at the end of the file)."""
        data = self.read_at(offset, len(out))
        if len(data) > len(out):  # (a store's answer to a ranged read longer than asked)
            raise StorageError(f"a read of {len(out)} bytes at offset {offset} returned {len(data)}")
        out[: len(data)] = data
        return len(data)

    def close(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError


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


class DirectoryError(RcfmtError, IsADirectoryError):
    """A path given as a file names a directory (a dataset, read with ``rcfmt.dataset()``;
    ``writing``: the target of a file write, refused before anything is written)."""

    def __init__(self, path: str, writing: bool = False):
        hint = ("name a file, or write a dataset there with rcfmt.write_dataset()" if writing
                else "use rcfmt.dataset() for directories")
        super().__init__(f"{path} is a directory; {hint}")


class Store(Protocol):
    """An object store's module, as :mod:`rcfmt.storage.registry` uses it (the store's
    own client library reads it, and commits a dataset version there; listings and
    writes of stores other than Azure go through ``pyarrow.fs``)."""

    def open(self, uri: str, size: int | None = None, tail: int = 1 << 20) -> ByteSource:
        """The object ``uri`` for reading; ``size`` when the caller knows it."""

    def create_if_absent(self, uri: str, data: bytes) -> bool:
        """Create ``uri`` holding ``data`` unless it exists (atomic on the server): True
        if created, False if the server refused because it exists."""

    def read_object(self, uri: str, limit: int | None = None) -> bytes | None:
        """The object's bytes (its first ``limit`` at most); None if it does not exist."""


class ProcessSetting:
    """A value for the whole process (``value``, None until given) that a ``with
    replaced(value):`` block puts in force and then restores: the client settings given
    in code (:func:`rcfmt.storage.s3.s3_settings`, :func:`rcfmt.storage.azure.azure_settings`)."""

    def __init__(self):
        self.value = None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def replaced(self, value):
        with self._lock:
            saved, self.value = self.value, value
        try:
            yield
        finally:
            with self._lock:
                self.value = saved


def available(module: str) -> bool:
    """Whether the client library ``module`` (e.g. ``"boto3"``) can be imported."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def client_errors() -> tuple:
    """What pyarrow's filesystem clients raise on failure: OSError, and for some (GCS
    credentials that cannot be loaded) a bare ArrowException."""
    import pyarrow as pa

    return OSError, pa.ArrowException


def storage_error(exc: Exception, what: str, where: str) -> OSError:
    """A client's I/O failure (after its own retries) as a StorageError naming the file;
    FileNotFoundError (and rcfmt's own errors) pass through unchanged."""
    if isinstance(exc, (FileNotFoundError, RcfmtError)):
        return exc
    return StorageError(f"{what} {where!r} failed: {exc}")


def tmp_name(base: str) -> str:
    """A hidden temporary name beside ``base`` (``.base.<random>.rcfmt-tmp``)."""
    return f".{base}.{uuid.uuid4().hex[:12]}.rcfmt-tmp"
