"""Vacuum: what of a dataset no reader can need any more, removed -- old index versions
(retained from when they were superseded), data, deletion and run files no kept version
names, writers' leftovers; locally and on object stores (docs/DATASET.md §4)."""
from __future__ import annotations

import math
import os
import time

import numpy as np

from ..errors import CorruptFileError, InvalidOptionError, StorageError, UnsupportedError
from ..runtime.options import flag
from ..storage import COMMIT_SCHEMES, delete_files, is_remote, list_tree, local_path, object_size, scheme_of
from ..storage.registry import store, uses_client
from ..storage.paths import dataset_uri, key_of, rel_of_key
from . import log
from .changelog import CHANGES, RUNS_DIR, layout_of, runs_of
from .deletions import DV_DIR
from .index import Snapshot
from .snapshot import DATA_SUFFIXES, discover, read_chain_start, read_snapshot, read_version_info

__all__ = ["vacuum", "MIN_RETENTION_SECONDS"]


def _deletion_files(snap: Snapshot) -> set:
    """The deletion files (relative paths) a version's vectors are in."""
    return {v.path for v in snap.vectors() if v is not None and v.path is not None}


def _kept_versions(versions: list[int], old) -> list[int]:
    """The versions vacuum keeps: from the oldest one that was the latest within the
    retention (the version after it is not ``old``) or the latest, every later one. A
    version is retained from when it is superseded, not from when it was written: a
    reader that opened the latest version of a table idle for days keeps it for the
    retention after the next commit. Removing only the oldest versions keeps the
    versions present contiguous, which the version hint's walk relies on
    (:func:`rcfmt.dataset.log.find_latest`)."""
    for i, v in enumerate(versions):
        if v == versions[-1] or not old(versions[i + 1]):
            return versions[i:]
    return []


def _with_checkpoint(root: str, versions: list[int], keep: list[int]) -> list[int]:
    """``keep`` extended down to the checkpoint the oldest kept version is read from (a
    changes version needs its checkpoint and the versions of its chain; docs/DATASET.md
    §4.2): vacuum drops versions older than the oldest checkpoint still needed. Changes
    versions whose checkpoint is gone (an interrupted vacuum removed it) can no longer
    be read: they are not kept (the oldest versions, so what is left stays contiguous)."""
    while keep:
        info = read_version_info(root, keep[0])
        if info is None or layout_of(info) != CHANGES:
            return keep
        start = info["checkpoint"]["version"]  # (an integer: read_version_info checks the info)
        if not 0 < start < keep[0]:  # (a forged chain must not make vacuum delete what is read)
            raise CorruptFileError(f"vacuum of {root!r}: version {keep[0]} names version {start} as its checkpoint, "
                                   f"which is not an earlier version; nothing was deleted")
        if start in versions:
            return [v for v in versions if v >= start]
        if len(keep) == 1:  # (the latest is never removed: reading it will say what is missing)
            return keep
        keep = keep[1:]
    return keep


def _referenced(root: str, retained: list[int], keep: list[int]) -> set:
    """Relative paths of the data files and deletion files the ``retained`` versions
    (those within the retention) name, and of the merged runs the versions vacuum keeps
    name. A version kept only because a retained one is read from its chain (older than
    the retention) keeps its metadata, not its data: like any version past the
    retention, it may no longer be readable."""
    referenced = set()
    for v in keep:
        if v in retained:
            try:
                snap = read_snapshot(root, v)
            except (FileNotFoundError, CorruptFileError):
                if _vacuumed_meanwhile(root, v, keep):
                    continue  # (what it named is no one's now: it cannot be read any more)
                raise
            info = snap.info
            referenced.update(snap.paths)
            referenced.update(_deletion_files(snap))
        else:  # (kept for a chain: its own metadata, not the chain it is read with)
            info = read_version_info(root, v) or {}
        if layout_of(info) == CHANGES:
            referenced.update(r["path"] for r in runs_of(info))
    return referenced


def _vacuumed_meanwhile(root: str, version: int, listed: list[int]) -> bool:
    """Whether another vacuum removed ``version``, or the checkpoint of its chain, since
    this vacuum listed the versions ``listed`` (oldest first, the latest last): it deletes
    the oldest versions first, so a version whose checkpoint it removed is on its way
    out. Never for the latest, nor for a checkpoint the latest's chain is read from:
    every vacuum keeps those, so their absence is damage, not a vacuum."""
    if version == listed[-1]:
        return False
    start = read_chain_start(root, version)
    if start is None:
        return True
    latest_start = read_chain_start(root, listed[-1])
    return start != version and start in listed and start < (latest_start or listed[-1]) \
        and not log.version_exists(root, start)


def _hidden_key(rel: str, own_dirs: set) -> bool:
    """Whether remote vacuum leaves the object ``rel`` (a key below the dataset's root)
    alone as none of a writer's: a segment starting with ``_`` or ``.`` hides it, but
    for one inside a partition value. Keys are decoded (:func:`key_of`): the value
    ``a/_b`` of column ``p`` is the key ``p=a/_b/part-...``, a writer's file when it is
    named as writers name theirs (``part-...``) in a directory that a file a kept
    version reads is in (``own_dirs``); anything else there (another dataset nested in
    ``p=a/_b``, another tool's staging) stays."""
    head, _, name = rel.rpartition("/")
    if name.startswith(("_", ".")):
        return True
    if not any(s.startswith(("_", ".")) for s in head.split("/")):
        return False
    return not (name.startswith("part-") and head in own_dirs)


def _refresh_hint(root: str, keep: list[int], removing: bool) -> None:
    """Before vacuum deletes versions, the hint is made to name the latest version when
    it is missing, unreadable or names an older one. A hint naming a later version (a
    commit landed meanwhile) stays. When versions are to be deleted (``removing``) and
    the hint still does not name the latest after that, a StorageError: a hint naming a
    deleted version that a process has cached would let that process take it for the
    latest (DATASET.md §4.1), so nothing is deleted."""
    if not keep:
        return
    hint = log.read_hint(root)
    if hint is None or hint[0] < keep[-1]:
        log.write_hint(root, keep[-1], object_size(log.version_path(root, keep[-1])))
        hint = log.read_hint(root) if removing else None
        if removing and (hint is None or hint[0] < keep[-1]):
            raise StorageError(f"vacuum of {root!r}: the version hint ({log.hint_path(root)!r}) could not be made to "
                               f"name version {keep[-1]}; nothing was deleted")


def _retention(seconds) -> float:
    """``retention_seconds`` as a float: a finite number, 0 or more (a negative one would
    reach files younger than now: a running writer's), else InvalidOptionError."""
    number = isinstance(seconds, (int, float, np.integer, np.floating)) and not isinstance(seconds, bool)
    value = float(seconds) if number else math.nan  # ("60" is no number of seconds)
    if not math.isfinite(value) or value < 0:
        raise InvalidOptionError(f"retention_seconds must be a finite number of seconds, 0 or more, got {seconds!r}")
    return value


#: the shortest retention :func:`vacuum` takes unless told ``enforce_retention_duration=False``
MIN_RETENTION_SECONDS = 3600.0


def vacuum(root, retention_seconds: float = 3600.0, *, dry_run: bool = False, progress=None,
           enforce_retention_duration: bool = True) -> list[str]:
    """Delete files of the dataset at ``root`` that no reader can need: index versions
    superseded more than ``retention_seconds`` ago (the version after them older than
    that; never the latest), data files referenced by no
    remaining version and older than the retention, staging/tmp leftovers of failed or
    crashed writers and scan claims of the Spark reader (``_scans``) older than the
    retention. Before the first commit, the files a crashed first writer published are
    removed too (files put there by other means stay). Returns the paths removed.

    On object storage (a dataset rcfmt wrote to ``s3://``) the same rules apply to
    objects, by their modification time: old index versions, and data objects no
    remaining version references (an overwritten or crashed writer's); writers there
    stage nothing. On S3 it also aborts the multipart uploads below the dataset begun
    before the retention (a killed or cancelled writer's, which no listing of objects
    shows; their keys are in what it returns). A prefix without any committed version is
    left alone. ``progress``:
    a bar of files deleted on stderr (None: on a terminal; True, False).

    A write publishes its data files before it commits the version naming them, so a
    retention shorter than a write still running deletes its files, and the version it
    then commits cannot be read. A retention under :data:`MIN_RETENTION_SECONDS` (an
    hour) is therefore refused (InvalidOptionError, nothing deleted) unless
    ``enforce_retention_duration=False`` says that no write is running (as Delta's
    ``retentionDurationCheck``); a dry run is never refused."""
    from ..runtime.progress import wanted

    wanted(progress)
    dry_run = flag(dry_run, "dry_run")
    retention_seconds = _retention(retention_seconds)
    if flag(enforce_retention_duration, "enforce_retention_duration") and not dry_run \
            and retention_seconds < MIN_RETENTION_SECONDS:
        raise InvalidOptionError(
            f"vacuum of {root!r} with a retention of {retention_seconds:g} s: a write running now (it publishes its "
            f"data files before it commits the version naming them) or one that began less than that ago would "
            f"lose its files, and the version it commits could not be read. Pass enforce_retention_duration=False "
            f"(the command: --no-enforce-retention-duration) when no write can be running, or a retention of at "
            f"least {MIN_RETENTION_SECONDS:g} s; nothing was deleted")
    if is_remote(root):
        return _vacuum_remote(dataset_uri(root), retention_seconds, dry_run, progress)
    root = os.path.abspath(local_path(root))
    versions = log.list_versions(root)
    if not versions and not os.path.isdir(log.meta_dir(root)):
        return []  # a plain directory of files: nothing of a writer's to clean up
    now = time.time()
    cutoff = now - float(retention_seconds)

    def old(p):
        try:
            return os.lstat(p).st_mtime < cutoff
        except FileNotFoundError:
            return False

    retained = _kept_versions(versions, lambda v: old(log.version_path(root, v)))
    keep = _with_checkpoint(root, versions, retained)
    referenced = _referenced(root, retained, keep)
    if not versions:  # no commit yet: only what a writer left (plain files stay, as read)
        referenced.update(discover(root).paths)
    removed = []
    for v in versions:
        if v not in keep:
            removed.append(log.version_path(root, v))
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(("_", "."))]
        rel_dir = os.path.relpath(dirpath, root)
        for name in filenames:
            if name.startswith(("_", ".")) or not name.endswith(DATA_SUFFIXES):
                continue
            rel = name if rel_dir == "." else f"{rel_dir.replace(os.sep, '/')}/{name}"
            p = os.path.join(dirpath, name)
            if rel not in referenced and old(p):
                removed.append(p)
    for area in (DV_DIR, RUNS_DIR):  # deletion files and merged runs no kept version names
        d = os.path.join(root, log.META_DIR, area)
        for name in (sorted(os.listdir(d)) if _own_dir(d) else ()):
            p = os.path.join(d, name)
            if f"{log.META_DIR}/{area}/{name}" not in referenced and old(p):
                removed.append(p)
    for area in (log.staging_root(root), log.tmp_dir(root), os.path.join(root, log.META_DIR, "_scans")):
        if _own_dir(area):
            for name in os.listdir(area):
                p = os.path.join(area, name)
                if old(p):
                    removed.append(p)
    for name in (os.listdir(log.meta_dir(root)) if os.path.isdir(log.meta_dir(root)) else ()):
        if log.is_hint_leftover(name) and old(os.path.join(log.meta_dir(root), name)):
            removed.append(os.path.join(log.meta_dir(root), name))  # a hint write a crash interrupted
    if not dry_run:
        from ..runtime.progress import progress_bar

        _refresh_hint(root, keep, len(keep) < len(versions))

        versions_gone = len(versions) - len(keep)
        with progress_bar(progress, total=len(removed), unit="files", desc="vacuum") as step:
            for k, p in enumerate(removed):
                if _own_dir(p):
                    log.remove_tree(p)
                else:
                    try:
                        os.unlink(p)
                    except FileNotFoundError:
                        pass
                    except OSError as exc:
                        if k < versions_gone:  # (the versions come first, the oldest first)
                            raise _version_not_deleted(root, p, k, exc) from None
                        raise StorageError(f"vacuum of {root!r}: {p!r} could not be deleted ({exc}); the files "
                                           "after it were left in place. Run vacuum again") from None
                step(1)
    return removed


def _own_dir(path: str) -> bool:
    """Whether ``path`` is a directory and not a symbolic link to one: vacuum lists and
    removes the insides of the dataset's own directories only (a link to a directory
    elsewhere is removed as a link, never followed)."""
    return os.path.isdir(path) and not os.path.islink(path)


def _vacuum_remote(root: str, retention_seconds: float, dry_run: bool, progress=None) -> list[str]:
    scheme = scheme_of(root)
    if scheme not in COMMIT_SCHEMES:  # refused before any request, as dataset writes there are
        raise UnsupportedError(f"{root!r}: vacuum on {scheme}:// is not supported yet (rcfmt writes datasets to "
                               f"{' and '.join(s + '://' for s in COMMIT_SCHEMES)} only); nothing was deleted")
    versions = log.list_versions(root)
    if not versions:
        return []  # nothing committed: no object here is known to be a writer's
    cutoff = time.time() - retention_seconds
    objects = dict(list_tree(root))
    meta = f"{log.META_DIR}/"

    def old(rel: str) -> bool:
        mtime = objects.get(rel)
        return mtime is not None and mtime < cutoff

    version_rel = {v: f"{meta}{os.path.basename(log.version_path(root, v))}" for v in versions}
    retained = _kept_versions(versions, lambda v: old(version_rel[v]))
    keep = _with_checkpoint(root, versions, retained)
    # (listed keys are decoded: an index's ``p=a%2Fb/...`` is the object ``p=a/b/...``)
    referenced = {key_of(rel) for rel in _referenced(root, retained, keep)}
    own_dirs = {rel.rpartition("/")[0] for rel in referenced}
    removed = [version_rel[v] for v in versions if v not in keep]
    for rel in sorted(objects):
        if rel.startswith((f"{meta}{DV_DIR}/", f"{meta}{RUNS_DIR}/")):
            if rel not in referenced and old(rel):
                removed.append(rel)  # a deletion file or merged run no kept version names
            continue
        if _hidden_key(rel, own_dirs) or not rel.endswith(DATA_SUFFIXES):
            continue
        if rel not in referenced and old(rel):
            removed.append(rel)
    paths = [f"{root}/{rel_of_key(rel)}" for rel in removed]
    if not dry_run:
        from ..runtime.progress import progress_bar

        _refresh_hint(root, keep, len(keep) < len(versions))

        versions_gone = len(versions) - len(keep)
        failed: set = set()
        with progress_bar(progress, total=len(paths), unit="files", desc="vacuum") as step:
            for k, p in enumerate(paths[:versions_gone]):  # the oldest first, one by one: see _version_not_deleted
                if delete_files([p]):
                    raise _version_not_deleted(root, p, k, "the store refused or did not answer")
                step(1)
            for start in range(versions_gone, len(paths), 100):  # a bar step per batch of deletes
                failed.update(delete_files(paths[start : start + 100]))
                step(len(paths[start : start + 100]))
        paths = [p for p in paths if p not in failed]  # (what is left: the next vacuum's)
    if scheme == "s3" and uses_client(root):  # incomplete multipart uploads of writers' data files
        def writers(rel: str) -> bool:  # (what vacuum would remove were it an object)
            return (rel.rpartition("/")[2].startswith("part-") and rel.endswith(DATA_SUFFIXES)
                    and not _hidden_key(rel, own_dirs) and rel not in referenced)

        paths += [f"{root}/{rel_of_key(rel)}" for rel in
                  store("s3").stale_uploads(root, cutoff, abort=not dry_run, wanted=writers)]
    return paths


def _version_not_deleted(root: str, path: str, deleted: int, why=None) -> StorageError:
    """Vacuum stops at the first index version it cannot delete: the versions left stay
    contiguous (a reader walking from a stale hint finds the latest, DATASET.md §4.1),
    and the files they name stay too."""
    because = f" ({why})" if why is not None else ""
    return StorageError(f"vacuum of {root!r}: the index version {path!r} could not be deleted{because} (after "
                        f"{deleted} older ones were); the versions after it and every data file were left in place. "
                        "Run vacuum again")

