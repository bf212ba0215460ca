"""Nested columns as JSON: the footer's ``nested`` key (the node tree of every top-level
field, docs/FORMAT.md §3a) and Arrow fields of any type in the dataset index's schema.
The tree itself and shredding are :mod:`rcfmt.schema.nested`.
"""
from __future__ import annotations

import base64
from typing import Callable

import pyarrow as pa

from ..runtime.records import replace
from ..errors import UnsupportedError
from .nested import (FIXED_SIZE_LIST, KINDS, LARGE_LIST, LEAF, LIST, MAP, MAX_DEPTH, MAX_LIST_SIZE, RUN_ENDS, STRUCT,
                     UNION, Node, is_nested, is_nested_extension, storage_type)
from .nested_storage import without_runs
from .types import arrow_type_from_json, arrow_type_json, extension_key, resolved_extension, same_type

__all__ = ["nodes_to_json", "nodes_from_json", "field_to_json", "field_from_json", "tree_features"]


# ---------------------------------------------------------------------- the footer's tree
def nodes_to_json(nodes) -> list:
    def enc(n: Node) -> dict:
        out = {"name": n.name, "nullable": n.nullable, "kind": n.kind, "column": n.column}
        if n.kind == FIXED_SIZE_LIST:
            out["size"] = n.size
        if n.kind == MAP and n.keys_sorted:
            out["keys_sorted"] = True
        if n.kind == UNION:
            out["mode"], out["type_codes"] = n.mode, list(n.type_codes)
        if n.ext is not None:  # (files that list "nested_extensions" in required_features)
            out.update(_ext_json(n.ext, n.ext_storage))
        if n.ree is not None:  # ("nested_run_end_encoded")
            out["run_end_encoded"] = n.ree
            if n.ree_ext is not None:
                out["run_end_encoded_extension"] = _ext_json(n.ree_ext, n.ree_ext_storage)
        if n.children:
            out["children"] = [enc(c) for c in n.children]
        return out

    return [enc(n) for n in nodes]


def has_extensions(nodes) -> bool:
    """Whether a node of the trees ``nodes`` has an extension type (the file then
    requires the feature ``nested_extensions``)."""
    return any(n.ext is not None or n.ree_ext is not None or has_extensions(n.children) for n in nodes)


#: the required features (docs/FORMAT.md §5) of a tree's nodes, each with what needs it
_FEATURES = {
    "nested_extensions": lambda n: n.ext is not None or n.ree_ext is not None,
    "empty_nested": lambda n: n.kind in (STRUCT, UNION) and not n.children,
    "nested_run_end_encoded": lambda n: n.ree is not None,
    "extension_storage": lambda n: n.ext_storage is not None or n.ree_ext_storage is not None,
    # (below a run_end_encoded type: an extension's storage holding runs, stored as their values)
    "extension_storage_runs": lambda n: n.ext_storage is not None and not same_type(storage_type(n.ext_storage),
                                                                                      n.stored_type),
}


def tree_features(nodes) -> list[str]:
    """The required features the trees ``nodes`` need besides ``nested``, in the order
    of :data:`_FEATURES` (``nested_extensions``, ``empty_nested``,
    ``nested_run_end_encoded``, ``extension_storage``, ``extension_storage_runs``)."""
    found: set[str] = set()

    def walk(n: Node) -> None:
        found.update(name for name, needs in _FEATURES.items() if needs(n))
        for c in n.children:
            walk(c)

    for n in nodes:
        walk(n)
    return [name for name in _FEATURES if name in found]


def _ext_json(ext: tuple, declared: pa.DataType | None = None) -> dict:
    out = {"extension_name": ext[0], "extension_metadata": base64.b64encode(ext[1]).decode("ascii")}
    if declared is not None:  # ("extension_storage": its storage as Arrow declares it)
        out["arrow_storage"] = arrow_type_json(declared)
    return out


def _ext_from_json(obj: dict, what: str) -> tuple | None:
    """``(name, metadata)`` of a node's or field's extension keys (None without them)."""
    if "extension_name" not in obj and "extension_metadata" not in obj:
        return None
    name, meta = obj.get("extension_name"), obj.get("extension_metadata")
    if not isinstance(name, str) or not isinstance(meta, str):
        raise ValueError(f"{what} has a malformed extension type")
    try:
        return name, base64.b64decode(meta, validate=True)
    except ValueError:
        raise ValueError(f"{what} has malformed extension metadata") from None


def _declared(obj: dict, stored: pa.DataType, what: str, in_runs: bool = False) -> pa.DataType | None:
    """The ``arrow_storage`` of an extension's keys ``obj`` (None without it), checked
    to be stored as ``stored``: the type is its storage type (below a run_end_encoded
    type, its storage type without runs) and not ``stored`` itself."""
    if "arrow_storage" not in obj:
        return None
    if "extension_name" not in obj:
        raise ValueError(f"{what} has an arrow_storage without an extension")
    declared = arrow_type_from_json(obj["arrow_storage"])
    expected = without_runs(storage_type(declared)) if in_runs else storage_type(declared)
    if same_type(declared, stored) or not same_type(expected, stored):
        raise ValueError(f"{what}: arrow_storage {declared} is not stored as {stored}")
    return declared


def _with_storages(node: Node, obj: dict, ree_ext: dict | None, in_runs: bool) -> Node:
    """``node`` with its extensions' declared storages (``arrow_storage``) and the
    extension over its run_end_encoded type (``run_end_encoded_extension``), checked
    (``in_runs``: the node is below a run_end_encoded type)."""
    what = f"nested node {node.name!r}"
    if node.ext is not None:
        node = replace(node, ext_storage=_declared(obj, node.stored_type, what, in_runs or node.ree is not None))
    elif "arrow_storage" in obj:
        raise ValueError(f"{what} has an arrow_storage without an extension")
    if ree_ext is not None:
        inner = node.wrapped_types[-1]  # (the run_end_encoded type over the node's)
        node = replace(node, ree_ext=_ext_from_json(ree_ext, what), ree_ext_storage=_declared(ree_ext, inner, what))
    return node


def nodes_from_json(doc, columns) -> tuple:
    """The tree of every top-level field from the footer's ``nested`` key, checked:
    every physical column is used exactly once and is named by its node's path,
    structure columns have their types, and shapes are what the kinds say. Raises
    ValueError (the footer wraps it)."""
    if not isinstance(doc, list):
        raise ValueError("'nested' is not a list")
    seen: set[int] = set()

    def dec(obj, depth: int, parent: str | None = None, in_runs: bool = False) -> Node:
        if depth > MAX_DEPTH or not isinstance(obj, dict):
            raise ValueError("malformed nested node")
        kind, col, name = obj.get("kind"), obj.get("column"), obj.get("name")
        if isinstance(kind, str) and kind not in KINDS:  # (a later version's: refused by name)
            raise UnsupportedError(f"nested node {name!r} is of kind {kind!r}, which this version of rcfmt does "
                                   "not know")
        if kind not in KINDS or not isinstance(col, int) or isinstance(col, bool) or not isinstance(name, str):
            raise ValueError(f"malformed nested node {obj.get('name')!r}")
        if not 0 <= col < len(columns) or col in seen:
            raise ValueError(f"nested node {name!r} names column {col} twice or out of range")
        seen.add(col)
        path = name if parent is None else f"{parent}.{name}"
        if columns[col].name != path:  # (else the schema and the columns read would disagree)
            raise ValueError(f"nested node {path!r} names column {col}, which is {columns[col].name!r}")
        nullable = obj.get("nullable")
        if not isinstance(nullable, bool):
            raise ValueError(f"nested node {name!r} has no nullable flag")
        kids = obj.get("children", [])
        if not isinstance(kids, list):
            raise ValueError(f"nested node {name!r} has malformed children")
        ctype = columns[col].type.name
        want = {LEAF: (None, 0), STRUCT: ("bool", None), FIXED_SIZE_LIST: ("bool", 1), LIST: ("int32", 1),
                LARGE_LIST: ("int64", 1), MAP: ("int32", 2), UNION: ("int8", None)}[kind]
        if (want[0] is not None and ctype != want[0]) or (want[1] is not None and len(kids) != want[1]):
            raise ValueError(f"nested node {name!r} of kind {kind} has a {ctype} column and {len(kids)} children")
        below_runs = in_runs or obj.get("run_end_encoded") is not None
        children = tuple(dec(c, depth + 1, path, below_runs) for c in kids)
        size = obj.get("size", 0)
        if kind == FIXED_SIZE_LIST and (not isinstance(size, int) or not 0 < size <= MAX_LIST_SIZE):
            raise ValueError(f"fixed_size_list {name!r} has size {size!r}")
        mode, codes = obj.get("mode", ""), obj.get("type_codes", [])
        if kind == UNION and (mode not in ("sparse", "dense") or not isinstance(codes, list)
                              or len(codes) != len(children) or len(set(map(repr, codes))) != len(codes)
                              or not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 128
                                         for c in codes)):
            raise ValueError(f"union {name!r} has mode {mode!r} and type codes {codes!r}")
        ext = _ext_from_json(obj, f"nested node {name!r}")
        ree, ree_ext = obj.get("run_end_encoded"), obj.get("run_end_encoded_extension")
        if kind == LEAF and (ext is not None or ree is not None or "arrow_storage" in obj or ree_ext is not None):
            raise ValueError(f"nested leaf {name!r} has extension keys or run_end_encoded keys")  # (its column's type)
        if (ree is not None and ree not in RUN_ENDS) or (ree_ext is not None and (ree is None or not isinstance(
                ree_ext, dict) or _ext_from_json(ree_ext, f"nested node {name!r}") is None)):
            raise ValueError(f"nested node {name!r} has a malformed run_end_encoded type")
        leaf = columns[col].type.to_arrow() if kind == LEAF else None
        node = Node(name, nullable, kind, col, children, leaf, size if kind == FIXED_SIZE_LIST else 0,
                    bool(obj.get("keys_sorted", False)), mode if kind == UNION else "",
                    tuple(codes) if kind == UNION else (), ext, ree=ree, metadata=columns[col].metadata)
        return _with_storages(node, obj, ree_ext, in_runs)

    nodes = tuple(dec(o, 0) for o in doc)
    if len(seen) != len(columns):
        raise ValueError("nested tree does not use every column")
    for n in nodes:
        try:
            n.arrow_type  # map keys must be non-nullable etc.: Arrow refuses bad shapes
        except (pa.ArrowInvalid, TypeError) as exc:
            raise ValueError(f"nested field {n.name!r}: {exc}") from None
    return nodes


# ---------------------------------------------------------------------- fields
def field_to_json(f: pa.Field, flat_type_json: Callable[[pa.DataType], dict]) -> dict:
    """A field of any type as JSON (flat types as ``flat_type_json`` writes them; an
    extension of a nested type as its storage's JSON with ``extension_name`` and
    ``extension_metadata``, and ``arrow_storage`` when that holds dictionaries or views;
    a run_end_encoded type of nested values as its values' JSON with
    ``run_end_encoded``, and ``run_end_encoded_extension`` for an extension over it: the
    keys of the tree's nodes, docs/FORMAT.md §3a)."""
    t = f.type
    if is_nested_extension(t):
        decoded = storage_type(t.storage_type)
        declared = None if same_type(decoded, t.storage_type) else t.storage_type
        body = field_to_json(f.with_type(decoded), flat_type_json)
        if pa.types.is_run_end_encoded(decoded):
            return {**body, "run_end_encoded_extension": _ext_json(extension_key(t), declared)}
        return {**body, **_ext_json(extension_key(t), declared)}
    if pa.types.is_run_end_encoded(t) and is_nested(t):
        body = field_to_json(pa.field(f.name, t.value_type), flat_type_json)
        return {**body, "run_end_encoded": str(t.run_end_type), "nullable": bool(f.nullable)}
    if pa.types.is_struct(t):
        body = {"type": STRUCT, "fields": [field_to_json(c, flat_type_json) for c in t]}
    elif pa.types.is_union(t):
        body = {"type": UNION, "mode": t.mode, "type_codes": list(t.type_codes),
                "fields": [field_to_json(c, flat_type_json) for c in t]}
    elif pa.types.is_map(t):
        body = {"type": MAP, "key": field_to_json(t.key_field, flat_type_json),
                "value": field_to_json(t.item_field, flat_type_json)}
        if t.keys_sorted:
            body["keys_sorted"] = True
    elif pa.types.is_fixed_size_list(t):
        body = {"type": FIXED_SIZE_LIST, "size": t.list_size, "item": field_to_json(t.value_field, flat_type_json)}
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        body = {"type": LARGE_LIST if pa.types.is_large_list(t) else LIST,
                "item": field_to_json(t.value_field, flat_type_json)}
    else:
        body = flat_type_json(t)
    return {"name": f.name, **body, "nullable": bool(f.nullable)}


def field_from_json(obj: dict, flat_type: Callable[[dict], pa.DataType], depth: int = 0) -> pa.Field:
    """Inverse of :func:`field_to_json`; malformed input raises ValueError."""
    if depth > MAX_DEPTH or not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise ValueError(f"malformed field {obj!r}")
    kind = obj.get("type")

    def sub(key):
        return field_from_json(obj[key], flat_type, depth + 1)

    if kind == STRUCT:
        t = pa.struct([field_from_json(c, flat_type, depth + 1) for c in obj["fields"]])
    elif kind == UNION:
        mode, codes = obj.get("mode"), obj.get("type_codes")
        if mode not in ("sparse", "dense") or not isinstance(codes, list) \
                or not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 128 for c in codes):
            raise ValueError(f"malformed union field {obj.get('name')!r}")
        t = pa.union([field_from_json(c, flat_type, depth + 1) for c in obj["fields"]], mode, codes)
    elif kind == MAP:
        t = pa.map_(sub("key"), sub("value"), keys_sorted=bool(obj.get("keys_sorted", False)))
    elif kind == FIXED_SIZE_LIST:
        t = pa.list_(sub("item"), int(obj["size"]))
    elif kind in (LIST, LARGE_LIST):
        t = (pa.large_list if kind == LARGE_LIST else pa.list_)(sub("item"))
    else:
        t = flat_type(obj)
    what = f"field {obj['name']!r}"
    nested = kind in (STRUCT, UNION, MAP, FIXED_SIZE_LIST, LIST, LARGE_LIST)
    ext = _ext_from_json(obj, what) if nested else None
    if ext is not None:
        t = resolved_extension(ext, _declared(obj, t, what), t)
    ree, ree_ext = (obj.get("run_end_encoded"), obj.get("run_end_encoded_extension")) if nested else (None, None)
    if ree is not None:
        if ree not in RUN_ENDS:
            raise ValueError(f"{what} has a malformed run_end_encoded type")
        t = pa.run_end_encoded(RUN_ENDS[ree], t)
        if isinstance(ree_ext, dict) and _ext_from_json(ree_ext, what) is not None:
            t = resolved_extension(_ext_from_json(ree_ext, what), _declared(ree_ext, t, what), t)
    return pa.field(obj["name"], t, bool(obj.get("nullable", True)))
