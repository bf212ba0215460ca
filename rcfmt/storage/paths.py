"""What a path argument may be: local paths, ``file://`` URIs and object-store URIs.

A local path is a ``str`` or ``os.PathLike``; a ``file://`` URI names its absolute
path; any other ``scheme://`` is an object store, named in one spelling per store by
:func:`scheme_of` (``gcs://`` is ``gs``; ``abfss://`` and ``az://`` are ``abfs``). A URI
is never taken for a relative local path (which would quietly write
``./s3:/bucket/...``): operations that take local paths only say so through
:func:`local_path`.
"""
from __future__ import annotations

import os
import re

from ..errors import CorruptFileError, InvalidOptionError, UnsupportedError

__all__ = ["URI", "SCHEME_ALIASES", "fspath", "file_uri", "local_path", "is_remote", "scheme_of", "bucket_and_key",
           "inner_path", "dataset_uri", "check_inside", "parsable_uri", "key_of", "rel_of_key", "endpoint_parts"]

#: ``scheme://`` at the start of a path (group 1: the scheme as written)
URI = re.compile(r"\A([A-Za-z][A-Za-z0-9+.\-]*)://")
#: other spellings of the stores' schemes
SCHEME_ALIASES = {"gcs": "gs", "abfss": "abfs", "az": "abfs"}


def fspath(where) -> str:
    """``where`` (``str``, ``bytes`` or ``os.PathLike``) as a non-empty ``str``;
    InvalidOptionError for what is not a path."""
    try:
        path = os.fspath(where)
    except TypeError:
        raise InvalidOptionError(f"expected a path (str or os.PathLike), got {type(where).__name__}") from None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not path:
        raise InvalidOptionError("empty path")
    return path


def file_uri(path: str) -> str:
    """The absolute local path a ``file://`` URI names (no host, or ``localhost``)."""
    from urllib.parse import unquote, urlsplit  # (not imported by local paths: 2 ms with ipaddress)

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
    path = fspath(where)
    m = URI.match(path)
    if m is None:
        return path
    scheme = m.group(1).lower()
    if scheme != "file":
        raise UnsupportedError(
            f"{path!r}: {scheme}:// URIs are not supported here; rcfmt writes files and reads and writes datasets "
            f"at local paths and file:// URIs (single files can be read from object storage). "
            f"Nothing was read or written.")
    return file_uri(path)


def is_remote(where) -> bool:
    """Whether ``where`` is an object-store URI (a scheme other than ``file://``)."""
    if not isinstance(where, str):
        return False
    m = URI.match(where)
    return m is not None and m.group(1).lower() != "file"


def scheme_of(uri: str) -> str:
    """The object store a URI names, lower case, in one spelling per store (``gcs://``
    is ``gs``; ``abfss://`` and ``az://`` are ``abfs``)."""
    scheme = URI.match(uri).group(1).lower()
    return SCHEME_ALIASES.get(scheme, scheme)


def bucket_and_key(uri: str) -> tuple[str, str]:
    """``(bucket, key)`` of an ``s3://`` or ``gs://`` URI (see :func:`checked_key`)."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(uri)
    return parts.netloc, checked_key(uri, parts, unquote(parts.path).lstrip("/"))


def checked_key(uri: str, parts, key: str) -> str:
    """``key``, the object key of ``uri`` (split as ``parts``), unless it would not be
    stored as named: a ``#`` starts a URI's fragment, which no key holds (every object
    below such a root would land on one key), and HTTP clients resolve ``.`` and ``..``
    segments (a partition value ``a/..`` would put its file elsewhere, where vacuum takes
    it for a stray and deletes it). InvalidOptionError for those."""
    if parts.fragment or uri.endswith("#"):
        raise InvalidOptionError(f"{uri!r}: '#' starts a URI fragment, which no object key holds; write it as %23")
    if any(segment in (".", "..") for segment in key.split("/")):
        raise InvalidOptionError(f"{uri!r}: the object key {key!r} holds a '.' or '..' segment, which HTTP clients "
                                 f"resolve away (a partition value such as 'a/..' cannot be stored on object storage)")
    return key


def inner_path(uri: str) -> str:
    """``bucket/key`` of an ``s3://`` or ``gs://`` URI, as ``pyarrow.fs`` names it."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(uri)
    checked_key(uri, parts, unquote(parts.path))
    return f"{parts.netloc}{unquote(parts.path)}".rstrip("/")


def dataset_uri(uri: str) -> str:
    """The object-store URI of a dataset's root, without a trailing ``/``.
    UnsupportedError for a URI with a query (pyarrow's ``?endpoint_override=...``
    options): a dataset's objects are named by paths below its root, where a query
    cannot follow; the store's settings come from the environment or
    ``rcfmt.storage.s3_settings`` (docs/STORAGE.md)."""
    if "?" in uri:
        raise UnsupportedError(
            f"{uri!r}: options in a dataset's URI are not supported (its index names objects below the root, "
            f"where a query cannot follow); give the store's settings through the environment or "
            f"rcfmt.storage.s3_settings / azure_settings (docs/STORAGE.md), or read a single file with "
            f"rcfmt.read_table. Nothing was read or written.")
    return uri.rstrip("/")


def parsable_uri(uri: str) -> str:
    """``uri`` as a strict URI parser takes it (pyarrow's ``FileSystem.from_uri``): the
    scheme in lower case, the path percent-encoded but for ``/`` (a space or non-ASCII
    text in a path, or a partition value rcfmt escapes only as Hive does, is refused
    raw), its query kept. The path it names is unchanged (:func:`inner_path`)."""
    from urllib.parse import quote, unquote, urlsplit, urlunsplit

    parts = urlsplit(uri)
    return urlunsplit((parts.scheme.lower(), parts.netloc, quote(unquote(parts.path), safe="/"), parts.query, ""))


def key_of(rel: str) -> str:
    """The object key, below a dataset's root, that the relative path ``rel`` (as an
    index names it, joined to the root's URI) reaches: URIs are percent-decoded
    (:func:`inner_path`), so the partition directory ``p=a%2Fb`` is the key ``p=a/b``,
    which is how a listing (``list_tree``) names it."""
    from urllib.parse import unquote

    return unquote(rel)


def rel_of_key(key: str) -> str:
    """The relative path that reaches the object ``key`` below a root, percent-encoded
    but for ``/`` (the inverse of :func:`key_of`: ``#``, ``?``, spaces and non-ASCII
    text would otherwise be read as a URI's fragment, query or be refused)."""
    from urllib.parse import quote

    return quote(key, safe="/=")


def endpoint_parts(endpoint: str) -> tuple[str, str]:
    """``(scheme, host[:port])`` of an endpoint written with or without a scheme (the
    Hadoop spelling ``fs.s3a.endpoint`` has none: https)."""
    if "://" in endpoint:
        scheme, rest = endpoint.split("://", 1)
        return scheme.lower(), rest.rstrip("/")
    return "https", endpoint.rstrip("/")


def check_inside(root: str, path: str, real_root: str | None = None, what: str = "data file") -> str:
    """``path`` if, with symlinks resolved, it lies inside ``root``; else CorruptFileError
    naming it as ``what``. (Object stores have no symlinks: there
    :func:`rcfmt.dataset.index.check_relpath` suffices.) ``real_root``: ``os.path.realpath(root)``, for a caller checking many paths."""
    if is_remote(root) or _plainly_below(root, path):
        return path
    if real_root is None:
        real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if os.path.commonpath([real_root, real]) != real_root:
        raise CorruptFileError(f"{what} resolves to {real!r}, outside the dataset root {real_root!r}", path=path)
    return path


def _plainly_below(root: str, path: str) -> bool:
    """Whether ``path`` is ``root`` joined with plain names none of which is a symlink
    (then it resolves inside ``root``, wherever ``root`` itself resolves): one lstat per
    name below the root instead of one per component of the whole path."""
    head = root.rstrip(os.sep)
    if not head or not path.startswith(head + os.sep):
        return False
    at = head
    for name in path[len(head) + 1:].split(os.sep):
        if name in ("", ".", ".."):
            return False
        at = os.path.join(at, name)
        if os.path.islink(at):
            return False
    return True
