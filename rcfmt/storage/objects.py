"""Small objects looked up, read and replaced whole: what a dataset's version hint needs
(:mod:`rcfmt.dataset.log`). One ``stat`` or one request each on local disk, S3, GCS and
Azure (each store's ``size``, ``read_object`` and ``replace_object``); other stores
through ``pyarrow.fs``. Imports ``registry``, ``paths`` and the store modules' public
names.
"""
from __future__ import annotations

from ..errors import StorageError
from . import arrow_fs, local
from .paths import fspath, is_remote, local_path, scheme_of
from .registry import from_uri, open_output, store, uses_client

__all__ = ["object_size", "read_object", "replace_object"]


def object_size(where) -> int | None:
    """Bytes of the single file or object ``where``; None if there is none. One
    ``stat`` locally, one metadata request on S3 (HEAD), GCS and Azure."""
    path = fspath(where)
    if not is_remote(path):
        return local.size(local_path(path))
    if uses_client(path):
        return store(scheme_of(path)).size(path)
    fs, inner = from_uri(path)
    return arrow_fs.size(fs, inner, path)


def read_object(where, limit: int | None = None) -> bytes | None:
    """The bytes of the small file or object ``where`` (one request); None if there is none.
    ``limit``: read its first ``limit`` bytes at most (locally: of a regular file only,
    None for anything else, which a read could block on)."""
    path = fspath(where)
    if not is_remote(path):
        return local.read_whole(local_path(path), limit)
    if uses_client(path):
        try:
            return store(scheme_of(path)).read_object(path, limit)
        except StorageError as exc:
            raise StorageError(f"reading {path!r} failed: {exc}") from None
    fs, inner = from_uri(path)
    return arrow_fs.read_whole(fs, inner, path, limit)


def replace_object(where, data: bytes) -> None:
    """Write the small ``data`` as the file or object ``where``, replacing what is there,
    so that readers see the old bytes or the new ones, never a mix: locally a temporary
    file renamed over it (not fsync'd: for hints a crash may lose), on S3, GCS and Azure
    one unconditional upload."""
    path = fspath(where)
    if not is_remote(path):
        local.replace(local_path(path), data)
        return
    if scheme_of(path) in ("s3", "gs") and uses_client(path):
        store(scheme_of(path)).replace_object(path, data)
        return
    sink = open_output(path, atomic=False)  # (Azure: a block blob appears whole)
    try:
        sink.write(data)
        sink.commit()
    except BaseException:
        sink.abort()
        raise
