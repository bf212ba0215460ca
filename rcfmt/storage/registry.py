"""Which store a path is in, and the operations every caller uses: open, write, list, delete.

Reading a single file (``open``, ``read_table``, scans) takes a local path
(``str`` or ``os.PathLike``), a ``file://`` URI, an object-store URI that
``pyarrow.fs`` understands (``s3://``, ``gs://``, ``hdfs://``; credentials and
endpoints from the environment, e.g. ``AWS_ENDPOINT_URL``, or the URI's query), an
Azure URI (``abfs[s]://container@account.dfs.core.windows.net/...``, ``az://...``), or
a path together with a ``filesystem=`` (a ``pyarrow.fs.FileSystem``, or an fsspec
filesystem, adapted through ``pyarrow.fs.PyFileSystem(FSSpecHandler(...))``).
``pyarrow.fs`` is the primary layer (:mod:`rcfmt.storage.arrow_fs`). Where the store's
own client library is installed (:data:`STORES`), files are read through it: ``s3://``
through boto3, whose suffix-range GET opens a file in one request
(:mod:`rcfmt.storage.s3`); ``gs://`` through google-cloud-storage, which sends ranged
GETs only (:mod:`rcfmt.storage.gcs`); Azure blobs through azure-storage-blob, with
bounded retries and timeouts (:mod:`rcfmt.storage.azure`). Local files keep their fast
path (``os.pread`` on one descriptor: :mod:`rcfmt.storage.local`).

Single files are written to the same places (:func:`open_output`): streamed to a
hidden temporary object and moved over the target when complete, so a reader never
sees part of a file.

Datasets are read from object-store URIs too (:func:`remote_kind`, :func:`list_sizes`:
the index versions are listed, the index and the data files read through the same
layer), and written, optimized and vacuumed on S3, GCS and Azure, whose conditional
creates commit a version (:func:`check_commit_support`,
:func:`rcfmt.storage.commit.create_if_absent`). On other stores those are refused with
:class:`~rcfmt.errors.UnsupportedError` before anything is read or created.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import StorageError, UnsupportedError
from . import arrow_fs, local
from .base import ByteSink, ByteSource, available, client_errors
from .paths import URI, file_uri, fspath, inner_path, is_remote, parsable_uri, scheme_of

__all__ = ["STORES", "COMMIT_SCHEMES", "store", "uses_client", "from_uri", "open_input", "open_output", "store_identity_of",
           "delete_files", "remote_kind", "list_tree", "remote_entries", "list_names", "list_sizes",
           "check_commit_support"]

#: the object stores with a module of their own: scheme -> (the module's name in this
#: package, imported on first use: a local read never loads them; the client library it
#: reads and commits with, that library's package, the extra that installs it)
STORES = {"s3": ("s3", "boto3", "boto3", "s3"),
          "gs": ("gcs", "google.cloud.storage", "google-cloud-storage", "gcs"),
          "abfs": ("azure", "azure.storage.blob", "azure-storage-blob", "azure")}
#: object stores whose conditional create rcfmt uses to commit dataset versions
COMMIT_SCHEMES = ("s3", "gs", "abfs")


def store(scheme: str) -> ModuleType:
    """The module of the object store ``scheme`` (:data:`STORES`; see
    :class:`rcfmt.storage.base.Store`), imported on first use."""
    return importlib.import_module(f"{__package__}.{STORES[scheme][0]}")


def uses_client(uri: str) -> bool:
    """Whether ``uri`` is read through its store's own client library (installed, and
    the URI has no query: pyarrow's ``?region=...`` options go to pyarrow's client)."""
    scheme = scheme_of(uri)
    if scheme not in STORES or (scheme != "abfs" and "?" in uri):
        return False
    return available(STORES[scheme][1])


def from_uri(uri: str):
    """``(pyarrow filesystem, path in it)`` for an object-store URI."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    scheme = scheme_of(uri)
    if scheme in ("s3", "gs"):
        inner_path(uri)  # (checks the key: no fragment, no '.' or '..' segment)
    settings = store("s3").current_settings() if scheme == "s3" else None
    if settings and uri[:5].lower() == "s3://":
        return store("s3").filesystem(settings), inner_path(uri)
    if scheme == "gs" and "?" not in uri:  # (a query's options go to pyarrow's from_uri)
        return store("gs").filesystem(), inner_path(uri)
    if scheme == "abfs":
        azure = store("abfs")
        return azure.filesystem(azure.settings(azure.split_uri(uri)[0])), azure.inner_path(uri)
    try:
        return pafs.FileSystem.from_uri(parsable_uri(uri))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
        raise UnsupportedError(f"{uri!r}: {exc}") from None


def _azure_sdk(uri: str) -> bool:
    """Whether ``uri`` is an Azure blob that azure-storage-blob can reach (its bounded
    retries and timeouts: listings, deletes)."""
    return scheme_of(uri) == "abfs" and uses_client(uri)


def open_input(where, filesystem=None, size: int | None = None, tail: int = 1 << 20) -> tuple[str, ByteSource]:
    """``(path to show in messages, source)`` for reading the single file ``where``;
    ``size``, when the caller knows it, saves an object store the request that asks.
    Sources that learn the size with a read of the object's last ``tail`` bytes (S3
    through boto3: one request) hold those in ``prefetched``."""
    path = fspath(where)
    if filesystem is not None:
        return path, arrow_fs.ArrowFile(arrow_fs.as_arrow_filesystem(filesystem), path, path, size)
    m = URI.match(path)
    if m is None:
        return path, local.LocalFile(path)
    if m.group(1).lower() == "file":
        path = file_uri(path)
        return path, local.LocalFile(path)
    if uses_client(path):  # S3: one request; GCS: ranged GETs only; Azure: bounded retries and timeouts
        return path, store(scheme_of(path)).open(path, size, tail)
    fs, inner = from_uri(path)
    return path, arrow_fs.ArrowFile(fs, inner, path, size)


def store_identity_of(uri: str) -> tuple:
    """Which store the object-store ``uri`` is read from (the ``identity`` of the source
    :func:`open_input` would give): two stores holding the same path are told apart."""
    if uses_client(uri):
        return store(scheme_of(uri)).identity(uri)
    return arrow_fs.store_identity(from_uri(uri)[0])


def open_output(where, filesystem=None, *, atomic: bool = True) -> ByteSink:
    """A :class:`~rcfmt.storage.base.ByteSink` for writing the single file ``where``: a
    local path, a ``file://`` URI, an object-store URI, or a path of ``filesystem``
    (``pyarrow.fs`` or fsspec). Bad paths raise before anything is created.
    ``atomic=False`` (object stores only) streams straight to the target, for files
    nothing names yet."""
    path = fspath(where)
    if filesystem is not None:
        return arrow_fs.ArrowSink(arrow_fs.as_arrow_filesystem(filesystem), path, path, atomic)
    m = URI.match(path)
    if m is None:
        return local.LocalSink(path)
    if m.group(1).lower() == "file":
        return local.LocalSink(file_uri(path))
    if scheme_of(path) == "abfs":  # block blobs appear whole when committed: atomic either way
        return store("abfs").BlobSink(path, check_directory=atomic)
    fs, inner = from_uri(path)
    return arrow_fs.ArrowSink(fs, inner, path, atomic)


def delete_files(paths) -> list[str]:
    """Delete files (local paths or object-store URIs) that may not exist, one after
    another in the order given; best effort: returns those whose delete failed."""
    failed = []
    for p in paths:
        try:
            if not is_remote(p):
                local.delete(p)
            elif _azure_sdk(p):
                store("abfs").delete(p)
            elif scheme_of(p) == "s3" and uses_client(p):  # (pyarrow's delete leaves a directory object)
                store("s3").delete(p)
            else:
                fs, inner = from_uri(p)
                fs.delete_file(inner)
        except FileNotFoundError:
            pass  # (gone already: deleted)
        except (*client_errors(), StorageError):
            failed.append(p)
    return failed


def remote_kind(uri: str) -> str | None:
    """"file", "dir" or None (nothing there) for an object-store URI."""
    if _azure_sdk(uri):
        return store("abfs").kind(uri)
    fs, inner = from_uri(uri)
    return arrow_fs.kind(fs, inner, uri)


def list_tree(uri: str) -> list[tuple[str, float]]:
    """Every object below the object-store prefix ``uri``: ``(path relative to it,
    modification time in seconds since the epoch)``."""
    if _azure_sdk(uri):
        return store("abfs").tree(uri)
    fs, inner = from_uri(uri)
    return arrow_fs.tree(fs, inner, uri)


def remote_entries(directory: str) -> list:
    """The ``pyarrow.fs.FileInfo`` of each entry of an object-store ``directory`` (one
    listing request); empty if it does not exist."""
    if _azure_sdk(directory):
        return store("abfs").entries(directory)
    fs, inner = from_uri(directory)
    return arrow_fs.entries(fs, inner, directory)


def list_names(directory: str) -> list[str]:
    """Names of the entries of ``directory`` (a local path or an object-store URI);
    empty if it does not exist."""
    if not is_remote(directory):
        return local.names(directory)
    return [info.base_name for info in remote_entries(directory)]


def list_sizes(directory: str) -> dict[str, int]:
    """``{name: size}`` of the files in ``directory`` (a local path or an object-store
    URI; one listing request); empty if it does not exist."""
    if not is_remote(directory):
        return local.sizes(directory)
    import pyarrow.fs as pafs

    return {info.base_name: info.size for info in remote_entries(directory) if info.type == pafs.FileType.File}


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
    _, module, package, extra = STORES[scheme]
    if not available(module):
        raise UnsupportedError(f"{uri!r}: committing a dataset on {scheme}:// needs {package} "
                               f"(pip install 'rcfmt[{extra}]'); nothing was written")
