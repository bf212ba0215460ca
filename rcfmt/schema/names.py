"""Field names as Arrow allows them: empty, or repeated (docs/FORMAT.md §5 "Names").
A file addresses its columns by position; a lookup by a name that more than one field
answers is refused with :func:`ambiguous_name`, never answered by one of them."""
from __future__ import annotations

from ..errors import SchemaError

__all__ = ["name_index", "ambiguous_name"]


def name_index(names) -> dict[str, int]:
    """``{name: position}`` of ``names``; a name that repeats (Arrow allows it) maps to
    -1, so a lookup by it can be refused as ambiguous (:func:`ambiguous_name`)."""
    index: dict[str, int] = {}
    for i, name in enumerate(names):
        index[name] = -1 if name in index else i
    return index


def ambiguous_name(name: str, names) -> SchemaError:
    """The error for a lookup by ``name``, which more than one field of ``names`` (the
    top-level names, or the paths it could spell) answers."""
    where = [i for i, n in enumerate(names) if n == name]
    at = f" (positions {where})" if len(where) > 1 else ""
    return SchemaError(f"column name {name!r} is ambiguous: {max(len(where), 2)} fields have it{at}; a file keeps "
                       "repeated names, but a projection or filter cannot pick one of them by name: read all "
                       "columns (columns=None) and select by position")
