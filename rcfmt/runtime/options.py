"""Checks of the options a caller passes, one message per kind of option: an on-off
flag is ``True`` or ``False`` (numpy's bools too), never any value Python finds truthy;
a list of column names is a name or an iterable of names, never a number iterated."""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..errors import InvalidOptionError

__all__ = ["flag", "names"]


def flag(value, name: str) -> bool:
    """``value`` as a bool; InvalidOptionError unless it is one ("no" is no False)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InvalidOptionError(f"{name} must be True or False, got {value!r}")


def names(value, name: str) -> list:
    """``value`` (a column name, or an iterable of them) as a list of names;
    InvalidOptionError for anything else (a number, bytes, a mapping, an iterable
    holding a non-string)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (bytes, bytearray, memoryview, dict)) or not isinstance(value, Iterable):
        raise InvalidOptionError(f"{name} must be a column name or a list of them, got {value!r}")
    out = list(value)
    if not all(isinstance(v, str) for v in out):
        raise InvalidOptionError(f"{name} must be a column name or a list of them, got {value!r}")
    return out
