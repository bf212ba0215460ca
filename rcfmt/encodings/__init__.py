"""Value encodings: one module per encoding, an explicit registry, and the selector.

Adding an encoding is one new module defining an :class:`~rcfmt.encodings.base.Encoding`
subclass with a fresh wire ``id``, plus its module name in ``_MODULES`` below.
"""
from __future__ import annotations

import functools
import importlib
import threading

import numpy as np

from ..errors import InvalidOptionError, UnsupportedError
from .base import ColumnValues, EncodedChunk, Encoding
from .ids import NAMES, holds

__all__ = ["ColumnValues", "EncodedChunk", "Encoding", "by_id", "by_name", "all_encodings", "holds_type"]

_MODULES = ("plain", "dictionary", "rle", "bitpack", "delta", "alp", "delta_length", "byte_split")

# Filled once, on first use (importing the encoding modules at package import would
# make a cycle with the native kernels' wrappers). Readers look the maps up without a
# lock: _load builds complete maps and only then publishes them, so a thread sees
# either None or the full registry, never a half-filled one.
_BY_ID: dict[int, Encoding] | None = None
_BY_NAME: dict[str, Encoding] | None = None
_LOAD_LOCK = threading.Lock()


def _registry() -> tuple[dict[int, Encoding], dict[str, Encoding]]:
    global _BY_ID, _BY_NAME
    by_id, by_name = _BY_ID, _BY_NAME
    if by_id is not None and by_name is not None:
        return by_id, by_name
    with _LOAD_LOCK:
        if _BY_ID is None or _BY_NAME is None:
            by_name_new: dict[str, Encoding] = {}
            by_id_new = _load(by_name_new)
            _BY_NAME = by_name_new
            _BY_ID = by_id_new
        return _BY_ID, _BY_NAME


def _load(by_name: dict[str, Encoding]) -> dict[int, Encoding]:
    by_id: dict[int, Encoding] = {}
    for module_name in _MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{module_name}")
        except ModuleNotFoundError as exc:  # a module still being written
            if exc.name == f"{__name__}.{module_name}":
                continue
            raise
        for cls in module.ENCODINGS:
            enc = cls()
            if enc.id in by_id or enc.name in by_name:
                raise RuntimeError(f"duplicate encoding id/name: {enc!r}")
            if NAMES.get(enc.id) != enc.name:
                raise RuntimeError(f"encoding {enc.name!r} (id {enc.id}) is not in rcfmt.encodings.ids")
            by_id[enc.id] = enc
            by_name[enc.name] = enc
    return by_id


def by_id(encoding_id: int) -> Encoding:
    """The encoding with wire id ``encoding_id``; UnsupportedError if unknown."""
    try:
        return _registry()[0][encoding_id]
    except KeyError:
        raise UnsupportedError(f"unknown encoding id {encoding_id} (written by a newer rcfmt?)") from None


def by_name(name: str) -> Encoding:
    """The encoding called ``name``; InvalidOptionError if unknown."""
    try:
        return _registry()[1][name]
    except KeyError:
        raise InvalidOptionError(f"unknown encoding {name!r}; known: {sorted(_BY_NAME)}") from None


def all_encodings() -> list[Encoding]:
    registry = _registry()[0]
    return [registry[i] for i in sorted(registry)]


@functools.lru_cache(maxsize=None)
def holds_type(ltype) -> np.ndarray:
    """Per encoding id (0..255): 0 where a known encoding cannot hold ``ltype`` values,
    1 otherwise; unknown ids pass here and are refused when a chunk is decoded. (The
    footer check of every open uses it.)"""
    row = np.ones(256, np.uint8)
    for encoding_id in NAMES:
        row[encoding_id] = holds(encoding_id, ltype)
    row.flags.writeable = False
    return row
