"""Arrow schemas of nested fields as filters and datasets see them: the columns a filter
may name (:func:`filter_schema`, :func:`bind_schema`), and whether two types nest the
same way (:func:`same_shape`, for schema evolution). The tree of a file's fields is
:mod:`rcfmt.schema.nested`, which re-exports these.
"""
from __future__ import annotations

import functools
from typing import Callable

import pyarrow as pa

from ..errors import SchemaError
from .nested_storage import is_nested, is_nested_extension, storage_type

__all__ = ["filter_schema", "bind_schema", "row_struct", "same_shape", "relax_nullability"]


def _schema_cache(fn):
    """``functools.lru_cache`` for functions of a schema, which calls ``fn`` uncached for
    a schema that cannot be hashed (one holding a Python extension type without
    ``__hash__``)."""
    cached = functools.lru_cache(maxsize=256)(fn)

    @functools.wraps(fn)
    def call(schema):
        try:
            hash(schema)
        except TypeError:
            return fn(schema)
        return cached(schema)

    call.cache_clear = cached.cache_clear
    return call


@_schema_cache
def filter_schema(schema: pa.Schema) -> pa.Schema:
    """The columns a filter may name in data of ``schema``: its flat fields and the
    leaves under its structs (by dotted path). ``schema`` itself when it has no nested
    field."""
    if not any(is_nested(f.type) for f in schema):
        return schema
    out, unfilterable = [], []

    def walk(f: pa.Field, path: str, nullable: bool) -> None:
        struct = row_struct(f.type)
        if struct is not None:
            for c in struct:
                walk(c, f"{path}.{c.name}", nullable or f.nullable)
            if not len(struct):
                unfilterable.append(path)
        elif not is_nested(f.type):
            out.append(pa.field(path, f.type, nullable or f.nullable))
        else:
            unfilterable.append(path)

    for f in schema:
        walk(f, f.name, False)
    metadata = schema.metadata
    if unfilterable:  # (named in the error of a filter that names one: see rcfmt.predicate.bind)
        metadata = {**(metadata or {}), UNFILTERABLE_KEY: "\n".join(unfilterable).encode()}
    return pa.schema(out, metadata=metadata)


#: filter schemas' metadata key listing the nested fields a filter cannot name (maps,
#: unions, structs without fields, extensions over nested types), one path per line
UNFILTERABLE_KEY = b"rcfmt.unfilterable"


@_schema_cache
def bind_schema(schema: pa.Schema) -> pa.Schema:
    """What a filter binds to: :func:`filter_schema`, plus the lists at the top level
    or under structs (by dotted path, with their list type), which ``list_contains``
    names. ``schema`` itself when it has no nested field."""
    if not any(is_nested(f.type) for f in schema):
        return schema
    lists = []

    def walk(f: pa.Field, path: str) -> None:
        t = f.type
        if row_struct(t) is not None:
            for c in row_struct(t):
                walk(c, f"{path}.{c.name}")
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            lists.append(pa.field(path, t, True))  # (list_contains refuses lists of nested values)

    for f in schema:
        walk(f, f.name)
    base = filter_schema(schema)
    return pa.schema([*base, *lists], metadata=base.metadata)


def row_struct(t: pa.DataType) -> pa.DataType | None:
    """The struct type whose fields a filter names by dotted path in a field of type ``t``:
    ``t`` itself, or the values of a run_end_encoded ``t`` (a slot per row); None for
    others (an extension's struct is read whole)."""
    if pa.types.is_struct(t):
        return t
    if pa.types.is_run_end_encoded(t) and pa.types.is_struct(storage_type(t.value_type)):
        return storage_type(t.value_type)
    return None


def same_shape(a: pa.DataType, b: pa.DataType, same_leaf: Callable[[pa.DataType, pa.DataType], bool]) -> bool:
    """Whether two types nest the same way (kinds, field names, list sizes) with leaves
    that ``same_leaf`` accepts; nullability aside."""
    a, b = storage_type(a), storage_type(b)
    if is_nested(a) != is_nested(b):
        return False
    if not is_nested(a):
        return same_leaf(a, b)
    if is_nested_extension(a) or is_nested_extension(b):
        return is_nested_extension(a) and is_nested_extension(b) and a.extension_name == b.extension_name \
            and same_shape(a.storage_type, b.storage_type, same_leaf)
    if pa.types.is_run_end_encoded(a) or pa.types.is_run_end_encoded(b):
        return pa.types.is_run_end_encoded(a) and pa.types.is_run_end_encoded(b) \
            and a.run_end_type == b.run_end_type and same_shape(a.value_type, b.value_type, same_leaf)
    kinds = [pa.types.is_struct, pa.types.is_map, pa.types.is_fixed_size_list, pa.types.is_large_list,
             pa.types.is_list, pa.types.is_union]
    if [k(a) for k in kinds] != [k(b) for k in kinds]:
        return False
    if pa.types.is_fixed_size_list(a) and a.list_size != b.list_size:
        return False
    if pa.types.is_union(a) and (a.mode != b.mode or list(a.type_codes) != list(b.type_codes)):
        return False
    fa = list(a) if pa.types.is_struct(a) or pa.types.is_union(a) else [a.key_field, a.item_field] if pa.types.is_map(a) else [a.value_field]
    fb = list(b) if pa.types.is_struct(b) or pa.types.is_union(b) else [b.key_field, b.item_field] if pa.types.is_map(b) else [b.value_field]
    return len(fa) == len(fb) and all(x.name == y.name and same_shape(x.type, y.type, same_leaf)
                                      for x, y in zip(fa, fb))


def relax_nullability(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """``a`` with each nested field nullable where the same field of ``b`` is (types of
    the same shape: :func:`same_shape`): what holds the values of both. Union and
    run-end-encoded types are returned as they are; extension types must be equal (an
    extension type's storage is its own: SchemaError, naming both)."""
    def field(x: pa.Field, y: pa.Field) -> pa.Field:
        return pa.field(x.name, relax_nullability(x.type, y.type), x.nullable or y.nullable, x.metadata)

    if isinstance(a, pa.BaseExtensionType) or isinstance(b, pa.BaseExtensionType):
        if a != b:
            raise SchemaError(f"extension types {a} and {b} differ (their storage: {a.storage_type} against "
                              f"{b.storage_type}); an extension type cannot be relaxed")
        return a
    if type(a) is not type(b):
        return a
    if pa.types.is_struct(a):
        return pa.struct([field(x, b.field(x.name)) if b.get_field_index(x.name) >= 0 else x for x in a])
    if pa.types.is_map(a):
        return pa.map_(a.key_field, field(a.item_field, b.item_field), a.keys_sorted)
    if pa.types.is_fixed_size_list(a):
        return pa.list_(field(a.value_field, b.value_field), a.list_size)
    if pa.types.is_large_list(a):
        return pa.large_list(field(a.value_field, b.value_field))
    if pa.types.is_list(a):
        return pa.list_(field(a.value_field, b.value_field))
    return a
