"""Versions of a dataset and the atomic commit protocol.

Layout of the metadata directory ``<root>/_rcfmt/``::

    v00000000000000000001.rcfmt   version 1 of the stats index: a checkpoint (complete)
    v00000000000000000002.rcfmt   ... its changes to version 1, or a checkpoint
    runs/                          changes of several versions merged (:mod:`.changelog`)
    _tmp/                          index files being written (before they are linked)
    _staging/<transaction>/        data files being written (before they are published)

Commit (optimistic concurrency, no locks, no server):

1. data files are written under ``_staging/<txn>/`` and, when all are complete, renamed
   to their final place (``<root>/<partition dirs>/part-<txn>-....rcfmt``; unique
   names, so a rename never replaces anything). Nothing references them yet, so no
   reader sees them;
2. the writer reads the latest version ``v`` and writes version ``v + 1`` to ``_tmp/``
   (fsync'd): the changes that turn ``v``'s index into the new one, or a checkpoint
   (:mod:`rcfmt.dataset.changelog`);
3. it publishes it with ``os.link(tmp, v(v+1))``, which fails if that version exists:
   create-if-absent, atomic on POSIX file systems. Exactly one writer wins each
   version number; the directory is fsync'd and the tmp name unlinked;
4. a loser re-reads: an **append** rebases (the new latest snapshot + its files) and
   retries; an **overwrite** whose base version is no longer the latest raises
   :class:`~rcfmt.errors.CommitConflictError`, as does an append whose rebased schema
   or partitioning no longer matches. A loser deletes its published data files.

Readers find the highest ``v*.rcfmt`` (:func:`find_latest`: from the version hint
``_rcfmt/_last_version``, confirmed by looking up the versions after it, else by a
listing) and open it: a version file only exists once complete, so a reader sees the
old or the new set of files, never a mix. After each commit the writer replaces the
hint with the version it committed (best effort: a hint is never trusted blindly).
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
from ..storage import create_if_absent, is_remote, list_sizes, object_size, read_object, replace_object

__all__ = ["META_DIR", "HINT", "version_path", "hint_path", "list_versions", "latest_version", "find_latest",
           "read_hint", "write_hint", "publish_version", "publish_remote_version", "fsync_dir", "staging_root",
           "tmp_dir"]

META_DIR = "_rcfmt"
STAGING = "_staging"
TMP = "_tmp"
#: the version hint: ``<version> <bytes of its index>\n`` (ASCII), replaced after each commit
HINT = "_last_version"
#: versions a stale hint is walked forward by, one lookup each, before a listing is cheaper
MAX_HINT_WALK = 16
_VERSION_RE = re.compile(r"v([0-9]{20})\.rcfmt\Z")


def meta_dir(root: str) -> str:
    return os.path.join(root, META_DIR)


def staging_root(root: str) -> str:
    return os.path.join(root, META_DIR, STAGING)


def tmp_dir(root: str) -> str:
    return os.path.join(root, META_DIR, TMP)


def version_path(root: str, version: int) -> str:
    return os.path.join(root, META_DIR, f"v{version:020d}.rcfmt")


def version_exists(root: str, version: int) -> bool:
    """Whether version ``version``'s index object is in the store (one stat or HEAD): a
    read of it that found nothing tells a vacuum that removed it meanwhile from a
    corrupt chain."""
    return object_size(version_path(root, version)) is not None


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


def hint_path(root: str) -> str:
    return os.path.join(root, META_DIR, HINT)


#: bytes of the hint read at most (a valid one is 42 at the most)
HINT_MAX_BYTES = 64
_HINT_RE = re.compile(rb"\A([0-9]{1,20})(?: ([0-9]{1,20}))?\n?\Z")


def is_hint_leftover(name: str) -> bool:
    """Whether ``name`` (in ``_rcfmt/``) is the temporary file of a local hint write
    (``._last_version.<random>.rcfmt-tmp``) that a crash left behind."""
    return name.startswith(f".{HINT}.") and name.endswith(".rcfmt-tmp")


def read_hint(root: str) -> tuple[int, int | None] | None:
    """``(version, bytes of its index or None)`` the hint names; None when there is no
    hint or it cannot be read or parsed (a hint is only ever a place to start looking)."""
    try:
        raw = read_object(hint_path(root), limit=HINT_MAX_BYTES)  # (a forged huge hint is not read whole)
    except (OSError, RcfmtError):
        return None
    m = _HINT_RE.match(raw or b"")
    if m is None or int(m.group(1)) < 1:
        return None
    return int(m.group(1)), (int(m.group(2)) if m.group(2) is not None else None)


def write_hint(root: str, version: int, size: int | None = None) -> None:
    """Replace the hint with ``version`` (just committed; ``size``: bytes of its index).
    Best effort: the commit stands whatever happens here, and a reader finding no
    hint, or a stale one, still finds the latest version."""
    text = f"{version}" if size is None else f"{version} {size}"
    try:
        replace_object(hint_path(root), f"{text}\n".encode())
    except (OSError, RcfmtError):
        pass


def next_versions(root: str, version: int, limit: int | None = None) -> tuple[int, int | None] | None:
    """Walk forward from the existing ``version``: ``(highest version, its index's bytes
    or None when that is ``version`` itself)`` found by looking up ``version + 1``,
    ``version + 2``, ... (one stat or request each) until one does not exist; None after
    ``limit`` (default :data:`MAX_HINT_WALK`) lookups found versions each (a listing is
    then cheaper)."""
    size = None
    for _ in range(MAX_HINT_WALK if limit is None else limit):
        nxt = object_size(version_path(root, version + 1))
        if nxt is None:
            return version, size
        version, size = version + 1, nxt
    return None


def find_latest(root: str, use_hint: bool = True) -> tuple[int, int | None]:
    """``(highest committed version, bytes of its index or None if unknown)``; ``(0,
    None)`` if none. O(1) lookups, whatever the number of versions: the hint names a
    version ``h``, which must exist (locally: a stat; on object stores its index is read
    under the size the hint records, which fails if it does not exist -- an index version
    is never replaced, and vacuum never deletes the latest), and ``h + 1`` must not
    (a lookup; if it exists, the walk goes on). Versions are contiguous (vacuum removes
    the oldest ones only), so the first missing one ends the walk. Without a usable hint
    (missing, garbage, naming a missing version, or stale by more than
    :data:`MAX_HINT_WALK` versions), or with ``use_hint=False``, the versions are
    listed."""
    hint = read_hint(root) if use_hint else None
    if hint is not None:
        version, size = hint
        if size is None or not is_remote(root):  # (a local stat costs microseconds)
            size = object_size(version_path(root, version))
        if size is not None:
            found = next_versions(root, version)
            if found is not None:
                return found[0], size if found[1] is None else found[1]
    sizes = version_sizes(root)
    if not sizes:
        return 0, None
    latest = max(sizes)
    return latest, sizes[latest]


def latest_version(root: str) -> int:
    """The highest committed version, 0 if none (see :func:`find_latest`)."""
    return find_latest(root)[0]


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
    """Link the index version ``tmp_path`` as ``version``; False if that version exists.

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
