"""Where files and datasets live: what a path argument may be.

Every entry point that takes a path (``open``, ``read_table``, ``write_table``,
``dataset``, ``write_dataset``, ``vacuum``, the CLI, the Spark source) resolves it here
first. Local paths (``str`` or ``os.PathLike``) and ``file://`` URIs are read and
written; any other URI (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``, ...) is refused
with :class:`~rcfmt.errors.UnsupportedError` before anything is read or created: a URI
is never taken for a relative local path (which would quietly write ``./s3:/bucket/...``).
"""
from __future__ import annotations

import os
import re
from urllib.parse import unquote, urlsplit

from .errors import InvalidOptionError, UnsupportedError

__all__ = ["local_path"]

_URI = re.compile(r"\A([A-Za-z][A-Za-z0-9+.\-]*)://")


def local_path(where) -> str:
    """The local filesystem path ``where`` names: a ``str`` or ``os.PathLike`` as given,
    or the absolute path of a ``file://`` URI. Raises :class:`UnsupportedError` for other URIs
    and :class:`InvalidOptionError` for what is not a path at all."""
    try:
        path = os.fspath(where)
    except TypeError:
        raise InvalidOptionError(f"expected a path (str or os.PathLike), got {type(where).__name__}") from None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not path:
        raise InvalidOptionError("empty path")
    m = _URI.match(path)
    if m is None:
        return path
    scheme = m.group(1).lower()
    if scheme != "file":
        raise UnsupportedError(
            f"{path!r}: {scheme}:// URIs are not supported; rcfmt reads and writes local paths and file:// URIs "
            f"(object storage is not implemented yet). Nothing was read or written.")
    parts = urlsplit(path)
    if parts.netloc not in ("", "localhost"):
        raise UnsupportedError(f"{path!r}: file:// URIs with a host ({parts.netloc!r}) are not supported")
    if not parts.path:
        raise InvalidOptionError(f"{path!r} names no file")
    return os.path.abspath(unquote(parts.path))
