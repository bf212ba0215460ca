"""Create-if-absent: how a dataset version is committed on an object store.

A version is committed by creating its object only if no object has its name, atomically
on the server (:func:`rcfmt.storage.registry.check_commit_support` says where rcfmt can:
each store's ``create_if_absent``, :class:`rcfmt.storage.base.Store`). A client that
retries a create whose answer was lost finds its own object there and is refused; the
object is then read back, so a commit that landed is never taken for lost.
"""
from __future__ import annotations

import time

from ..errors import StorageError
from .paths import scheme_of
from .registry import store

__all__ = ["create_if_absent", "CREATE_ATTEMPTS"]

#: creates refused while no object has the name (S3's 409 for a conditional write of the
#: same key in flight, which then did not land) are tried again this many times in all
CREATE_ATTEMPTS = 8


def create_if_absent(uri: str, data: bytes) -> bool:
    """Create the object ``uri`` holding ``data`` unless it exists: True if created,
    False if another writer's object has that name. Atomic on the server; the caller
    checked :func:`~rcfmt.storage.registry.check_commit_support`.

    A create the server refuses is told apart from one of ours whose answer was lost and
    retried by the client (the retry finds our own object): the object is read back and
    compared with ``data`` -- a commit is never taken for lost when it landed. A refusal
    with no object there (another create in flight, S3's 409) is tried again
    (:data:`CREATE_ATTEMPTS`); a create that failed unanswered and whose object cannot be
    found, or any other failure after a create was sent, raises a StorageError with
    ``outcome_unknown`` set (it may land yet)."""
    target = store(scheme_of(uri))
    try:
        return _create(target, uri, data)
    except BaseException as exc:
        if not isinstance(exc, Exception):  # (an interrupt once a create was out: it may land yet)
            exc.outcome_unknown = True
        raise


def _create(target, uri: str, data: bytes) -> bool:
    for attempt in range(CREATE_ATTEMPTS):
        try:
            created = target.create_if_absent(uri, data)
        except Exception as exc:  # (a StorageError, or a client's exception no store maps: unanswered alike)
            return _landed(target, uri, data, exc)
        if created:
            return True
        try:
            existing = target.read_object(uri)
        except Exception as exc:  # (refused, perhaps as the client's retry of our own create that landed)
            raise _unknown(uri, f"the create was refused and the object could not be read back ({exc})") from None
        if existing is not None:
            return existing == data
        time.sleep(0.05 * (attempt + 1))  # refused, no object: another create in flight (S3's 409), not landed yet
    raise _unknown(uri, f"the store refused {CREATE_ATTEMPTS} creates of an object that did not then exist (one of "
                        "ours may still be in flight)")


def _landed(target, uri: str, data: bytes, exc: Exception) -> bool:
    """After a create that failed without an answer: True if our object is there (it
    landed), False if another writer's is; else a StorageError whose ``outcome_unknown``
    is set -- the create may still land, so whatever it names must stay."""
    try:
        existing = target.read_object(uri)
    except Exception:
        existing = None
    if existing is not None:
        return existing == data
    raise _unknown(uri, f"the store did not confirm the create ({exc})")


def _unknown(uri: str, why: str) -> StorageError:
    """The error of a create that may have landed or may land yet: ``outcome_unknown``
    set, so that what the version names is kept."""
    err = StorageError(f"committing {uri!r}: {why}; the version may or may not become visible. Its data files are "
                       "left in place (vacuum removes them if no version names them); open the dataset again to "
                       "see which")
    err.outcome_unknown = True
    return err
