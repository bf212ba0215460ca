"""Arrow data in and out through the PyCapsule interface: what rcfmt accepts as a table
(:func:`as_table`: pyarrow tables and batches, pandas DataFrames, dicts of arrays, any
object with ``__arrow_c_stream__``/``__arrow_c_array__`` such as Polars and DuckDB
results), a stream to write batch by batch (:func:`arrow_stream`), and the stream a scan
exports (:func:`export_stream`, behind every ``__arrow_c_stream__`` of rcfmt).

Needs pyarrow alone (no other rcfmt module but :mod:`rcfmt.errors`), so every layer may
use it.
"""
from __future__ import annotations

from typing import Iterable

import pyarrow as pa

from ..errors import SchemaError

__all__ = ["as_table", "arrow_stream", "export_stream", "batches_and_schema", "with_range_index_columns",
           "CATEGORIES_KEY"]

#: schema metadata: ``{column: [category, ...]}`` of a DataFrame's categorical columns
#: (values are stored, not the categories: unused ones and their order would be lost)
CATEGORIES_KEY = b"rcfmt.pandas_categories"


def as_table(data) -> pa.Table:
    """Accept a pyarrow Table/RecordBatch, a pandas DataFrame or a dict of arrays."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, dict):
        try:
            return pa.table(data)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise SchemaError(f"cannot convert dict to a table: {exc}") from None
    if type(data).__module__.startswith("pandas") and type(data).__name__ == "DataFrame":
        try:
            return _with_categories(data, pa.Table.from_pandas(data))
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise SchemaError(f"cannot convert DataFrame to a table: {exc}") from None
    if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
        try:  # the Arrow PyCapsule interface: Polars, DuckDB, nanoarrow, ...
            if hasattr(data, "__arrow_c_stream__"):
                return pa.table(data)
            batch = pa.record_batch(data)
            return pa.Table.from_batches([batch])
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise SchemaError(f"cannot read {type(data).__name__} through the Arrow PyCapsule interface: {exc}") from None
    raise SchemaError(
        f"expected a pyarrow Table or RecordBatch, a pandas DataFrame, a dict of arrays or an object with "
        f"__arrow_c_stream__/__arrow_c_array__ (Polars, DuckDB, ...), got {type(data).__name__}")


def _with_categories(frame, table: pa.Table) -> pa.Table:
    """``table`` (``frame`` converted) with the categories of ``frame``'s categorical
    columns in its metadata (:data:`CATEGORIES_KEY`) where JSON holds them exactly
    (strings, ints, bools, finite floats)."""
    import json
    import math

    stored = {}
    for name, dtype in frame.dtypes.items():
        if isinstance(name, str) and getattr(dtype, "name", None) == "category":
            categories = dtype.categories.tolist()
            if all(type(c) in (str, int, bool) or type(c) is float and math.isfinite(c) for c in categories):
                stored[name] = categories
    if not stored:
        return table
    return table.replace_schema_metadata({**(table.schema.metadata or {}), CATEGORIES_KEY: json.dumps(stored).encode()})


def with_range_index_columns(table: pa.Table, positions=None) -> pa.Table:
    """``table`` whose pandas RangeIndex levels, which pandas metadata keeps as
    ``start``/``stop``/``step`` (labels given by row number), are int64 columns as
    ``preserve_index=True`` stores them: the table's rows may then be reordered.
    ``positions`` (one int64 per row): the rows' numbers among those the range labels
    (a filtered read's), else the rows are all of them in order."""
    import json

    meta = table.schema.metadata or {}
    try:
        pandas = json.loads(meta[b"pandas"])
        levels = pandas["index_columns"]
    except (KeyError, TypeError, ValueError):
        return table
    if not any(isinstance(level, dict) and level.get("kind") == "range" for level in levels):
        return table
    import numpy as np

    names = set(table.column_names)
    for i, level in enumerate(levels):
        if not (isinstance(level, dict) and level.get("kind") == "range"):
            continue
        if positions is not None:
            values = level["start"] + level["step"] * np.asarray(positions, dtype=np.int64)
        else:
            values = np.arange(level["start"], level["stop"], level["step"], dtype=np.int64)
        if len(values) != table.num_rows:
            raise SchemaError(f"pandas metadata: RangeIndex level {i} holds {len(values)} labels for "
                              f"{table.num_rows} rows")
        name = level.get("name")
        field_name = str(name) if name is not None and str(name) not in names else f"__index_level_{i}__"
        names.add(field_name)
        table = table.append_column(field_name, pa.array(values))
        levels[i] = field_name
        pandas["columns"].append({"name": name, "field_name": field_name, "pandas_type": "int64",
                                  "numpy_type": "int64", "metadata": None})
    return table.replace_schema_metadata({**meta, b"pandas": json.dumps(pandas).encode()})


def arrow_stream(data) -> pa.RecordBatchReader | None:
    """A reader over ``data`` when it is a stream to take batch by batch (an Arrow
    PyCapsule stream that is not already a pyarrow Table/RecordBatch), else None."""
    if isinstance(data, (pa.Table, pa.RecordBatch, dict)) or not hasattr(data, "__arrow_c_stream__"):
        return None
    if isinstance(data, pa.RecordBatchReader):
        return data
    if type(data).__module__.startswith("pandas"):
        return None
    try:
        return pa.RecordBatchReader.from_stream(data)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise SchemaError(f"cannot read {type(data).__name__} through the Arrow PyCapsule interface: {exc}") from None


def export_stream(schema: pa.Schema, batches, requested_schema=None):
    """The Arrow C stream PyCapsule (``__arrow_c_stream__``) of ``batches``, an iterable
    of record batches of ``schema`` read lazily, as the consumer pulls them."""
    return pa.RecordBatchReader.from_batches(schema, batches).__arrow_c_stream__(requested_schema)


def batches_and_schema(data, what: str = "write_dataset"):
    """``(schema, iterator of tables)`` of any data rcfmt takes (a table, batch, dict,
    pandas or Polars frame, RecordBatchReader, Arrow PyCapsule stream or an iterable of
    those), streamed where it comes as a stream."""
    stream = arrow_stream(data)
    if stream is not None:  # a RecordBatchReader or any Arrow PyCapsule stream
        return stream.schema, (pa.Table.from_batches([b]) for b in stream)
    if isinstance(data, (pa.Table, pa.RecordBatch, dict)) or type(data).__name__ == "DataFrame":
        table = as_table(data)
        return table.schema, iter([table])
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes)):
        it = iter(data)
        try:
            first = as_table(next(it))
        except StopIteration:
            raise SchemaError(f"{what} got an empty iterable: no schema to write") from None

        def chain():
            yield first
            for item in it:
                yield as_table(item)
        return first.schema, chain()
    return as_table(data).schema, iter([as_table(data)])
