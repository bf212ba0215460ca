"""Where files and datasets live: what a path argument may be, reading byte ranges,
writing files whole, listing, and committing dataset versions.

The package's modules, and what each may import (besides :mod:`rcfmt.errors` and
third-party libraries) -- ``tests/test_structure.py`` checks that no two of them import
each other, directly or around a circle, at module level or inside a function, and
that none imports another's ``_private`` name:

- ``paths``: URIs, schemes and their aliases, local paths, endpoints;
- ``base``: ByteSource, ByteSink, DirectoryError, error mapping, the ``Store`` protocol;
- ``fetch``: FetchOptions, the request pool and its concurrency;
- ``local``, ``arrow_fs`` (``pyarrow.fs`` and fsspec filesystems), and one module per
  object store -- ``s3``, ``gcs``, ``azure``: its settings, clients, reads and commits.
  These store modules import only ``base``, ``paths`` and ``fetch``;
- ``registry``: scheme -> store (open, sink, list, kind, delete; the client library,
  its package and extra); imports the stores;
- ``commit``: create-if-absent commits and the read-back of a lost answer; imports
  ``registry``;
- ``objects``: small objects looked up, read and replaced whole (a dataset's version
  hint); imports ``registry``;
- this ``__init__``: the public names, from any of them (no module of the package
  imports it).

Import the public names from ``rcfmt.storage``; settings that are module constants
(``rcfmt.storage.s3.ATTEMPTS``, ``rcfmt.storage.gcs.GCS_RETRY_SECONDS``,
``rcfmt.storage.azure.RETRIES``, ...) are set on the store's module.
"""
from __future__ import annotations

from .base import ByteSink, ByteSource, DirectoryError
from .commit import create_if_absent
from .fetch import FetchOptions, check_fetch
from .objects import object_size, read_object, replace_object
from .paths import is_remote, local_path, scheme_of
from .registry import (COMMIT_SCHEMES, check_commit_support, delete_files, list_names, list_sizes, list_tree,
                       open_input, open_output, remote_kind, store_identity_of)

__all__ = ["local_path", "open_input", "open_output", "object_size", "read_object", "replace_object", "ByteSource",
           "ByteSink", "DirectoryError", "is_remote", "remote_kind", "list_names", "list_sizes", "list_tree",
           "delete_files", "check_commit_support", "create_if_absent", "COMMIT_SCHEMES", "scheme_of",
           "FetchOptions", "check_fetch", "store_identity_of"]

#: public names of the object stores' modules, imported on first use (a local read
#: loads no store module: ``tests/test_cold_imports.py``); documented where they live,
#: :mod:`rcfmt.storage.s3` and :mod:`rcfmt.storage.azure`, so not in ``__all__`` (which
#: the API reference resolves eagerly)
_LAZY = {"S3_SETTINGS": "s3", "check_s3_settings": "s3", "s3_settings": "s3",
         "AZURE_SETTINGS": "azure", "azure_settings": "azure", "check_azure_settings": "azure"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
