"""Create-if-absent: how a dataset version is committed on an object store.

A version is committed by creating its object only if no object has its name, atomically
on the server (:func:`rcfmt.storage.registry.check_commit_support` says where rcfmt can:
each store's ``create_if_absent``, :class:`rcfmt.storage.base.Store`). A client that
retries a create whose answer was lost finds its own object there and is refused; the
object is then read back, so a commit that landed is never taken for lost.
"""
from __future__ import annotations

from ..errors import StorageError
from .paths import scheme_of
from .registry import store

__all__ = ["create_if_absent"]


def create_if_absent(uri: str, data: bytes) -> bool:
    """Create the object ``uri`` holding ``data`` unless it exists: True if created,
    False if it existed (or another writer's create of it is in flight). Atomic on the
    server; the caller checked :func:`~rcfmt.storage.registry.check_commit_support`.

    A create the server refuses is told apart from one of ours whose answer was lost and
    retried by the client (the retry finds our own object): the object is read back and
    compared with ``data`` -- a commit is never taken for lost when it landed."""
    target = store(scheme_of(uri))
    try:
        if target.create_if_absent(uri, data):
            return True
        return target.read_object(uri) == data
    except StorageError as exc:
        raise StorageError(f"committing {uri!r} failed: {exc}") from None
