"""Value encodings: one module per encoding, an explicit registry, and the selector.

Adding an encoding is one new module defining an :class:`~rcfmt.encodings.base.Encoding`
subclass with a fresh wire ``id``, plus its module name in ``_MODULES`` below.
"""
from __future__ import annotations

import importlib

from ..errors import InvalidOptionError, UnsupportedError
from .base import ColumnValues, EncodedChunk, Encoding

__all__ = ["ColumnValues", "EncodedChunk", "Encoding", "by_id", "by_name", "all_encodings"]

_MODULES = ("plain", "dictionary", "rle", "bitpack", "delta", "alp", "delta_length")

_BY_ID: dict[int, Encoding] = {}
_BY_NAME: dict[str, Encoding] = {}


def _load() -> None:
    for module_name in _MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{module_name}")
        except ModuleNotFoundError as exc:  # a module still being written
            if exc.name == f"{__name__}.{module_name}":
                continue
            raise
        for cls in module.ENCODINGS:
            enc = cls()
            if enc.id in _BY_ID or enc.name in _BY_NAME:
                raise RuntimeError(f"duplicate encoding id/name: {enc!r}")
            _BY_ID[enc.id] = enc
            _BY_NAME[enc.name] = enc


def by_id(encoding_id: int) -> Encoding:
    """The encoding with wire id ``encoding_id``; UnsupportedError if unknown."""
    if not _BY_ID:
        _load()
    try:
        return _BY_ID[encoding_id]
    except KeyError:
        raise UnsupportedError(f"unknown encoding id {encoding_id} (written by a newer rcfmt?)") from None


def by_name(name: str) -> Encoding:
    """The encoding called ``name``; InvalidOptionError if unknown."""
    if not _BY_ID:
        _load()
    try:
        return _BY_NAME[name]
    except KeyError:
        raise InvalidOptionError(f"unknown encoding {name!r}; known: {sorted(_BY_NAME)}") from None


def all_encodings() -> list[Encoding]:
    if not _BY_ID:
        _load()
    return [_BY_ID[i] for i in sorted(_BY_ID)]
