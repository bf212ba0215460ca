"""Datasets: a directory of rcfmt data files plus a table-level column-stats index.

``rcfmt.dataset(path)`` opens one (the latest version), ``rcfmt.write_dataset(table,
path, ...)`` writes and commits atomically. The layout and the commit protocol are
described in ``docs/DATASET.md`` and :mod:`rcfmt.dataset.log`; the index in
:mod:`rcfmt.dataset.index`.

This package is itself callable -- ``rcfmt.dataset(path)`` is
:func:`open_dataset` -- so that ``rcfmt.dataset`` can be both the function users call
and the package that holds :class:`Dataset`.
"""
from __future__ import annotations

import sys
import types

from ..errors import CommitConflictError
from .dataset import (Dataset, DatasetScan, FileInfo, Fragment, open_dataset, prune_blocks, scan_fragments,
                      vacuum)
from .evolution import same_types
from .index import FileEntry
from .log import META_DIR
from .optimize import RANGE_FILL
from .partitioning import Partitioning
from .commits import commit
from .files import DEFAULT_TARGET_FILE_ROWS, FileSetWriter, clustering_info
from .writer import WritePlan, begin_write, write_dataset

__all__ = [
    "dataset", "open_dataset", "write_dataset", "Dataset", "DatasetScan", "Fragment", "FileInfo", "FileEntry",
    "prune_blocks", "Partitioning", "FileSetWriter", "WritePlan", "begin_write", "commit", "scan_fragments", "vacuum",
    "CommitConflictError",
    # for engines that write and read datasets in parallel (the Spark source)
    "DEFAULT_TARGET_FILE_ROWS", "RANGE_FILL", "META_DIR", "clustering_info", "same_types",
]


class _CallableModule(types.ModuleType):
    def __call__(self, path, *, version=None) -> Dataset:
        """Open the dataset at ``path`` (see :func:`open_dataset`)."""
        return open_dataset(path, version=version)


sys.modules[__name__].__class__ = _CallableModule
#: ``rcfmt.dataset`` resolves (lazily, through rcfmt's ``_LAZY``) to this callable module
dataset = sys.modules[__name__]
