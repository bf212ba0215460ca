"""Schema evolution of datasets: which changes an append may make, and how files
written under an older schema are read under a newer one (docs/DATASET.md).

An append may

- add columns: older files read them as NULL (the column becomes nullable);
- leave out nullable columns: its files read them as NULL;
- widen a column's type, without loss: a signed or unsigned integer to a wider one of
  the same signedness, an unsigned integer to a wider signed one, float32 to float64,
  decimal128 to a larger precision at the same scale, string to large_string and
  binary to large_binary; older files' values (and their statistics) are converted
  when read.

Anything else (a narrower type, another kind of type, another nesting) would lose or
change data and raises :class:`~rcfmt.errors.SchemaError`. Nested types evolve only
in nullability.
"""
from __future__ import annotations

from collections import Counter

import pyarrow as pa

from ..runtime.records import replace
from ..schema import nested
from ..errors import SchemaError
from ..predicate.nnf import BoundAnd, BoundListContains, BoundNot, BoundOr, Leaf
from ..schema.types import logical_type_from_arrow, same_logical_type, same_type

__all__ = ["check_names", "widens", "merge_schemas", "column_ids", "file_renames", "renamed_expr"]


def _repeated(names: list) -> list:
    return sorted(n for n, k in Counter(names).items() if k > 1)


def check_names(schema: pa.Schema, where: str = "") -> None:
    """Raise :class:`SchemaError` for empty or repeated column names (at the top level or
    as the dotted path of a leaf under structs): a file may hold them, but a dataset
    matches columns by name across its files (its index, schema evolution, partitions,
    Spark)."""
    at = f" ({where})" if where else ""
    if "" in schema.names:
        raise SchemaError(f"a dataset's columns need non-empty names{at}: its index and partitions name them; a "
                          "single file written with rcfmt.write_table keeps an empty name")
    repeated = _repeated(schema.names) or _repeated(nested.filter_schema(schema).names)
    paths = [p for p in repeated if p in schema.names and p not in _repeated(schema.names)]
    if paths:
        raise SchemaError(f"column name(s) {paths} are both a top-level column and the path of a struct's field"
                          f"{at}: a dataset (and Spark) names fields by their dotted paths, so they must differ; "
                          "rename one, or read the file alone with rcfmt.read_table")
    if repeated:
        raise SchemaError(f"column names {repeated} repeat{at}: a dataset matches columns by name across its files "
                          "(its index, schema evolution, partitions), so its names must be unique; rename them, or "
                          "read the file alone with rcfmt.read_table, which keeps repeated names")


_SIGNED = [pa.int8(), pa.int16(), pa.int32(), pa.int64()]
_UNSIGNED = [pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]


def _same_flat(a: pa.DataType, b: pa.DataType) -> bool:
    return same_logical_type(logical_type_from_arrow(a), logical_type_from_arrow(b))


def widens(a: pa.DataType, b: pa.DataType) -> bool:
    """Whether every value of type ``a`` is a value of type ``b`` (``a`` may be read as
    ``b``): the same type, or a widening the module docstring lists."""
    if same_type(a, b):
        return True
    if nested.is_nested(a) or nested.is_nested(b):
        return nested.same_shape(a, b, _same_flat)
    if a in _SIGNED and b in _SIGNED:
        return _SIGNED.index(a) <= _SIGNED.index(b)
    if a in _UNSIGNED and b in _UNSIGNED:
        return _UNSIGNED.index(a) <= _UNSIGNED.index(b)
    if a in _UNSIGNED and b in _SIGNED:
        return _UNSIGNED.index(a) < _SIGNED.index(b)
    if a == pa.float32() and b == pa.float64():
        return True
    if pa.types.is_decimal128(a) and pa.types.is_decimal128(b):
        return a.scale == b.scale and a.precision <= b.precision
    texts = [(pa.string(), pa.large_string()), (pa.binary(), pa.large_binary())]
    if any(a in pair and b in pair for pair in texts):
        return True  # the same values: only Arrow's offset width differs
    return False


def _wider(name: str, a: pa.DataType, b: pa.DataType) -> pa.DataType:
    if nested.is_nested(a) or _same_flat(a, b):  # the same values (string and large_string): as stored
        if widens(a, b):
            if not nested.is_nested(a):
                return a
            try:  # (nullable wherever either is: a child NULL in one of them stays readable)
                return nested.relax_nullability(a, b)
            except SchemaError as exc:
                raise SchemaError(f"column {name!r}: {exc}") from None
    if widens(a, b):
        return b
    if widens(b, a):
        return a
    raise SchemaError(f"column {name!r}: {a} and {b} cannot hold each other's values; a dataset column may only "
                      f"widen (int32 -> int64, float32 -> float64, decimal precision up, string -> large_string)")


def merge_schemas(old: pa.Schema, new: pa.Schema) -> pa.Schema:
    """The data schema of a dataset at ``old`` after an append of data of schema
    ``new``: ``old``'s columns (widened where ``new`` widens them; ``new`` may lack
    nullable ones), then ``new``'s added columns, nullable. Raises SchemaError for a
    change that would lose data."""
    theirs = {f.name: f for f in new}
    out = []
    for f in old:
        g = theirs.get(f.name)
        if g is None:
            if not f.nullable:
                raise SchemaError(f"column {f.name!r} is not nullable, so an append must hold it")
            out.append(f)
            continue
        out.append(pa.field(f.name, _wider(f.name, f.type, g.type), f.nullable or g.nullable))
    known = set(old.names)
    out += [f.with_nullable(True) for f in new if f.name not in known]
    return pa.schema(out)


def keeps_columns(before: pa.Schema, after: pa.Schema) -> bool:
    """Whether ``after`` still holds every column of ``before``, each in its type or a
    wider one: what appends may do to a schema (an overwrite may do anything)."""
    names = set(after.names)
    return all(f.name in names and widens(f.type, after.field(f.name).type) for f in before)


def same_types(a: pa.Schema, b: pa.Schema) -> bool:
    """Same names and logical types (offset width of strings/binary and nullability aside)."""
    if a.names != b.names:
        return False
    return all(nested.same_shape(fa.type, fb.type, lambda x, y: same_logical_type(
        logical_type_from_arrow(x), logical_type_from_arrow(y))) for fa, fb in zip(a, b))


def merge_nullability(a: pa.Schema, b: pa.Schema) -> pa.Schema:
    return pa.schema([fa.with_nullable(fa.nullable or fb.nullable) for fa, fb in zip(a, b)])


# ------------------------------------------------------------------ renames: column ids
def column_ids(info: dict, schema: pa.Schema) -> dict[str, int]:
    """The id of every name a data column has had since the dataset recorded ids (its
    current names and the names renamed columns had before), from a version's info
    (``column_ids``); a version without them numbers its current names in order (no
    column of it was ever renamed, so every file holds its columns under these names).

    Ids are stable: a rename moves a column's id to its new name and keeps the old
    name, so each file's columns are found by the names it was written with. Names
    are never reused (dropped and renamed-away names are tombstones,
    ``dropped_columns``), so a name identifies one column over the dataset's history."""
    ids = info.get("column_ids")
    if ids is None:
        return {name: i for i, name in enumerate(schema.names)}
    return dict(ids)


def check_column_ids(info: dict, schema: pa.Schema) -> str | None:
    """What is wrong with a version's ``column_ids`` (None: nothing): an object of
    names to non-negative integer ids below ``next_column_id``, holding every data
    column, current columns with distinct ids."""
    ids = info.get("column_ids")
    if ids is None:
        return None
    top = info.get("next_column_id")
    if not isinstance(ids, dict) or not isinstance(top, int) or isinstance(top, bool):
        return "column_ids must be an object with an integer next_column_id"
    for name, i in ids.items():
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < top:
            return f"column id {i!r} of {name!r} is not an integer in [0, {top})"
    missing = [n for n in schema.names if n not in ids]
    if missing:
        return f"data columns {missing} have no column id"
    if len({ids[n] for n in schema.names}) != len(schema):
        return "two data columns share a column id"
    return None


def extend_column_ids(ids: dict[str, int], schema: pa.Schema) -> tuple[dict[str, int], int]:
    """``ids`` with a new id for every column of ``schema`` that has none (columns added
    by an append or ``evolve``), and the next free id."""
    out = dict(ids)
    nxt = max(out.values(), default=-1) + 1
    for name in schema.names:
        if name not in out:
            out[name] = nxt
            nxt += 1
    return out, nxt


def file_renames(file_names, ids: dict[str, int] | None, current) -> dict[str, str]:
    """``{dataset column: name in the file}`` for the columns a file holds under a name
    they had before a rename (``ids``: the dataset's recorded column ids, None while no
    column was ever renamed; ``current``: the data columns now)."""
    if not ids:
        return {}
    now = {ids[n]: n for n in current if n in ids}
    have = set(file_names)
    out = {}
    for name in file_names:
        i = ids.get(name)
        new = now.get(i) if i is not None else None
        if new is not None and new != name and new not in have:
            out[new] = name
    return out


def renamed_path(name: str, names: dict[str, str], tops=()) -> str:
    """Column name or dotted path ``name`` with its top-level column renamed by
    ``names`` (``{old: new}``). ``tops``: the top-level column names ``name`` is one of
    or a path under: a column of them whose name holds a dot (``c.d`` beside ``c``) is
    itself, not a path under another."""
    if name in names:
        return names[name]
    if name in tops:
        return name
    for top, new in names.items():
        if name.startswith(top + "."):
            return new + name[len(top):]
    return name


def renamed_schema(schema: pa.Schema, names: dict[str, str]) -> pa.Schema:
    """``schema`` with the top-level fields ``names`` says renamed."""
    return pa.schema([f.with_name(names.get(f.name, f.name)) for f in schema], metadata=schema.metadata)


def renamed_expr(expr, names: dict[str, str], tops=()):
    """Bound expression ``expr`` naming columns (and paths under them) renamed by
    ``names``: a filter on dataset columns as it reads a file that holds some of them
    under earlier names."""
    def ref(r):
        new = renamed_path(r.name, names, tops)
        return r if new == r.name else replace(r, name=new)

    def walk(e):
        if isinstance(e, (BoundAnd, BoundOr)):
            return type(e)(tuple(walk(c) for c in e.children))
        if isinstance(e, BoundNot):
            return BoundNot(walk(e.child))
        if isinstance(e, BoundListContains):
            return replace(e, column=ref(e.column), list_name=renamed_path(e.list_name, names, tops),
                           element=replace(e.element, column=ref(e.element.column)))
        if isinstance(e, Leaf):
            return replace(e, column=ref(e.column))
        return e

    return walk(expr) if names and expr is not None else expr
