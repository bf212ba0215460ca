"""Versions of a dataset and the atomic commit protocol.

Layout of the metadata directory ``<root>/_rcfmt/``::

    v00000000000000000001.rcfmt   version 1 of the stats index: a complete snapshot
    v00000000000000000002.rcfmt   ...
    _tmp/                          index files being written (before they are linked)
    _staging/<transaction>/        data files being written (before they are published)

Commit (optimistic concurrency, no locks, no server):

1. data files are written under ``_staging/<txn>/`` and, when all are complete, renamed
   to their final place (``<root>/<partition dirs>/part-<txn>-....rcfmt``; unique
   names, so a rename never replaces anything). Nothing references them yet, so no
   reader sees them;
2. the writer reads the latest version ``v`` and writes the complete index of version
   ``v + 1`` to ``_tmp/`` (fsync'd);
3. it publishes it with ``os.link(tmp, v(v+1))``, which fails if that version exists:
   create-if-absent, atomic on POSIX file systems. Exactly one writer wins each
   version number; the directory is fsync'd and the tmp name unlinked;
4. a loser re-reads: an **append** rebases (the new latest snapshot + its files) and
   retries; an **overwrite** whose base version is no longer the latest raises
   :class:`~rcfmt.errors.CommitConflictError`, as does an append whose rebased schema
   or partitioning no longer matches. A loser deletes its published data files.

Readers list ``_rcfmt/`` and open the highest ``v*.rcfmt``: a version file only
exists once complete, so a reader sees the old or the new set of files, never a mix.
Data files that no version references (failed or crashed writers, overwritten data)
are removed by :func:`vacuum` once older than a retention period.

Hard links are required (local disks, NFS, most POSIX file systems); where ``os.link``
is not supported, commits raise :class:`~rcfmt.errors.RcfmtError`.

On object storage (S3, GCS) the same protocol runs without staging or links: data files are
streamed straight to their final keys (no reader looks at them before a version names
them), and step 3 is a conditional PUT of the version object (``If-None-Match: *``),
which the server refuses with 412 when the version exists. Stores without such a
create-if-absent are refused before anything is written
(:func:`rcfmt.storage.check_commit_support`).
"""
from __future__ import annotations

import os
import random
import re
import shutil
import time

from ..errors import RcfmtError
from ..storage import create_if_absent, list_sizes

__all__ = ["META_DIR", "version_path", "list_versions", "latest_version", "publish_version",
           "publish_remote_version", "fsync_dir", "staging_root", "tmp_dir"]

META_DIR = "_rcfmt"
STAGING = "_staging"
TMP = "_tmp"
_VERSION_RE = re.compile(r"v([0-9]{20})\.rcfmt\Z")


def meta_dir(root: str) -> str:
    return os.path.join(root, META_DIR)


def staging_root(root: str) -> str:
    return os.path.join(root, META_DIR, STAGING)


def tmp_dir(root: str) -> str:
    return os.path.join(root, META_DIR, TMP)


def version_path(root: str, version: int) -> str:
    return os.path.join(root, META_DIR, f"v{version:020d}.rcfmt")


def list_versions(root: str) -> list[int]:
    """Committed versions of the dataset at ``root`` (a local path or an object-store URI)."""
    return sorted(version_sizes(root))


def version_sizes(root: str) -> dict[int, int]:
    """``{version: bytes of its index file}`` of the dataset at ``root``, from one listing."""
    out = {}
    for name, size in list_sizes(meta_dir(root)).items():
        m = _VERSION_RE.match(name)
        if m:
            out[int(m.group(1))] = size
    return out


def latest_version(root: str) -> int:
    """The highest committed version, 0 if none."""
    versions = list_versions(root)
    return versions[-1] if versions else 0


def fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def publish_version(root: str, version: int, tmp_path: str) -> bool:
    """Link the complete index ``tmp_path`` as ``version``; False if that version exists.

    The tmp file is unlinked in every case."""
    target = version_path(root, version)
    try:
        os.link(tmp_path, target)
    except FileExistsError:
        return False
    except OSError as exc:
        raise RcfmtError(f"cannot commit to {root!r}: hard links are not supported here ({exc}); "
                         "rcfmt datasets need a POSIX file system with hard links") from None
    finally:
        try:
            os.unlink(tmp_path)
        except FileNotFoundError:
            pass
    fsync_dir(meta_dir(root))
    return True


def publish_remote_version(root: str, version: int, data: bytes) -> bool:
    """Create the index object of ``version`` at the object-store ``root`` holding
    ``data`` unless it exists (:func:`rcfmt.storage.create_if_absent`: on S3 a PUT with
    ``If-None-Match: *``, on GCS an upload with ``ifGenerationMatch=0``); False if
    another writer has that version."""
    return create_if_absent(version_path(root, version), data)


def backoff(attempt: int) -> None:
    time.sleep(min(0.2, 0.002 * (2 ** min(attempt, 7))) * random.random())


def remove_tree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
