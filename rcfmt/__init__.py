"""rcfmt: a columnar file format built for data skipping.

The public API is re-exported here. Submodules are imported on first use, so that
``import rcfmt`` stays cheap.
"""
from __future__ import annotations

import importlib

from .errors import (
    ChecksumError,
    CorruptFileError,
    FilterError,
    InvalidDataError,
    InvalidOptionError,
    RcfmtError,
    RowIndexError,
    SchemaError,
    UnsupportedError,
)

__version__ = "0.1.0"

# public name -> module that defines it
_LAZY = {
    "write_table": "rcfmt.file.writer",
    "Writer": "rcfmt.file.writer",
    "read_table": "rcfmt.file.reader",
    "read_pandas": "rcfmt.interop.pandas_io",
    "open": "rcfmt.file.reader",
    "RcfmtFile": "rcfmt.file.reader",
    "col": "rcfmt.predicate.expr",
    "list_contains": "rcfmt.predicate.expr",
    "ScanStats": "rcfmt.scan.scanner",
    "FetchOptions": "rcfmt.storage.fetch",
    "Expr": "rcfmt.predicate.expr",
    "dataset": "rcfmt.dataset",
    "write_dataset": "rcfmt.dataset",
    "Dataset": "rcfmt.dataset",
    "CommitConflictError": "rcfmt.errors",
    "StorageError": "rcfmt.errors",
}

__all__ = [
    "RcfmtError", "CorruptFileError", "ChecksumError", "UnsupportedError",
    "SchemaError", "InvalidDataError", "InvalidOptionError", "RowIndexError", "FilterError", "__version__", *_LAZY,
]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rcfmt' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
