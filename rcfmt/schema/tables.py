"""The schema rcfmt stores for an Arrow schema: dictionary columns as their value type,
string and binary views as their offset form (inside nested types too), the logical type
of each flat field, and the flat physical columns a nested field is shredded into
(:mod:`rcfmt.schema.nested`). The writer, the dataset layer and schema evolution all
derive a file's columns from a schema through these functions.
"""
from __future__ import annotations

import pyarrow as pa

from ..errors import SchemaError
from . import nested
from .types import LogicalType, logical_type_from_arrow

__all__ = ["VIEW_STORAGE", "storage_schema", "physical_columns", "physical_schema"]

#: view types (Polars exports strings as string_view) are stored as their offset form
VIEW_STORAGE = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}


def storage_schema(schema: pa.Schema) -> tuple[pa.Schema, list[LogicalType | None]]:
    """The schema rcfmt stores (dictionary columns become their value type, string and
    binary views plain strings and binaries, inside nested types too; field metadata
    kept) and the logical type of each flat field (None for a nested one)."""
    fields, types = [], []
    for f in schema:
        if not isinstance(f.name, str):
            raise SchemaError(f"column names must be strings, got {f.name!r}")
        try:
            stored = nested.storage_type(f.type)
        except SchemaError as exc:
            raise SchemaError(f"column {f.name!r}: {exc}") from None
        if nested.is_nested(stored):
            types.append(None)
            fields.append(pa.field(f.name, stored, f.nullable, f.metadata))
            continue
        flat = f.type.value_type if pa.types.is_dictionary(f.type) else f.type  # (dictionaries: their values)
        try:
            ltype = logical_type_from_arrow(flat if isinstance(flat, pa.BaseExtensionType)
                                            else VIEW_STORAGE.get(flat, flat))
        except SchemaError as exc:
            raise SchemaError(f"column {f.name!r}: {exc}") from None
        types.append(ltype)
        fields.append(pa.field(f.name, ltype.to_arrow(), f.nullable, f.metadata))
    return pa.schema(fields, metadata=schema.metadata), types


def physical_columns(schema: pa.Schema, types) -> tuple[tuple | None, list[tuple[str, LogicalType, bool]]]:
    """The stored columns ``(name, type, nullable)`` of a storage schema, and the tree of
    every field when one of them is nested (None otherwise; see :mod:`rcfmt.schema.nested`)."""
    nodes, columns = nested.plan_schema(schema)
    return (nodes if any(t is None for t in types) else None), columns


def physical_schema(schema: pa.Schema) -> pa.Schema:
    """The stored columns of ``schema`` as an Arrow schema (nested fields as their
    dotted paths)."""
    stored, types = storage_schema(schema)
    _, columns = physical_columns(stored, types)
    return pa.schema([pa.field(n, t.to_arrow(), nullable) for n, t, nullable in columns])

