"""What one version of a dataset changed: the files it added, the files it removed and the
files whose deletion vectors it changed, compared with its parent version. Streaming
readers use it to deliver the rows each new version appends (and to notice versions that
delete or rewrite rows); it reads the two versions' indexes (paths, row counts and
deletion vectors only)."""
from __future__ import annotations

import numpy as np

from ..runtime.records import record
from ..errors import RcfmtError
from . import log
from .index import vectors_of
from .snapshot import read_snapshot

__all__ = ["VersionChanges", "version_changes", "NO_DATA_CHANGE"]

#: operations that leave the rows of the dataset as they were (files rewritten, index
#: rewritten): nothing to deliver
NO_DATA_CHANGE = frozenset({"optimize", "checkpoint"})


@record(frozen=True)
class VersionChanges:
    """The difference between version ``version`` and its parent (``version - 1``; none
    for version 1).

    ``added``: paths of the files it lists and its parent does not, in index order;
    ``added_rows``: their live rows; ``removed``: paths of the parent's files it no
    longer lists; ``vectors_changed``: paths of files in both whose deletion vector
    differs (rows deleted); ``info``: the version's commit metadata."""

    version: int
    info: dict
    added: tuple
    added_rows: tuple
    removed: tuple
    vectors_changed: tuple

    @property
    def operation(self) -> str | None:
        return self.info.get("operation")

    @property
    def changes_rows(self) -> bool:
        """Whether rows of the parent version are gone or rewritten: files removed or rows
        deleted (an overwrite, delete, update, merge or replaceWhere), unless the
        operation keeps the data as it was (:data:`NO_DATA_CHANGE`, and an evolve)."""
        if self.operation in NO_DATA_CHANGE or self.operation == "evolve":
            return False
        return bool(self.removed or self.vectors_changed)


def version_changes(root: str, version: int) -> VersionChanges:
    """What version ``version`` of the dataset at ``root`` changed (see
    :class:`VersionChanges`). :class:`rcfmt.errors.RcfmtError` when the version or its
    parent is no longer there (vacuumed)."""
    snap = _read(root, version)
    paths = snap.paths
    live = snap.live_rows() if len(snap) else np.zeros(0, np.int64)
    if version <= 1:
        return VersionChanges(version, dict(snap.info), tuple(paths), tuple(int(n) for n in live), (), ())
    parent = _read(root, version - 1)
    before = dict(zip(parent.paths, vectors_of(parent.table))) if len(parent) else {}
    now = dict(zip(paths, vectors_of(snap.table))) if len(snap) else {}
    added = [(p, int(n)) for p, n in zip(paths, live) if p not in before]
    removed = tuple(p for p in before if p not in now)
    changed = tuple(p for p, v in now.items() if p in before and before[p] != v)
    return VersionChanges(version, dict(snap.info), tuple(p for p, _ in added), tuple(n for _, n in added), removed,
                          changed)


def _read(root: str, version: int):
    try:
        return read_snapshot(root, version, columns=[])
    except FileNotFoundError:
        raise RcfmtError(f"version {version} of {root!r} is no longer there (removed by vacuum, or never "
                         f"committed); the latest is {log.latest_version(root)}") from None
