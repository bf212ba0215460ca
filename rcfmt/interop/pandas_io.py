"""pandas DataFrames in and out, the way ``pyarrow.parquet`` does it.

Writing (``rcfmt.write_table(df, ...)``, ``write_dataset``) converts with
``pyarrow.Table.from_pandas``: the index is stored as columns (a ``RangeIndex`` as
metadata only) and the ``pandas`` schema metadata records the index, the column
order and each column's pandas dtype, nullable extension dtypes (``Int64``,
``boolean``, ``string``) and categoricals among them. rcfmt keeps that metadata.

Reading (:func:`read_pandas`) gives the DataFrame back: the index restored (its
columns read even when ``columns`` leaves them out), nullable dtypes restored from the
metadata, and categorical columns read as Arrow dictionaries so that they come back as
``pandas.Categorical`` with the categories the writer's DataFrame had, in its order,
unused ones and a filtered read's included (rcfmt records them in the schema metadata
where JSON holds them exactly: strings, ints, bools, finite floats; other categories
come back sorted from the values read). Datasets do not keep the pandas metadata yet:
a dataset's index columns come back as ordinary columns.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Sequence

__all__ = ["read_pandas"]


def _pandas_metadata(schema) -> dict:
    raw = (schema.metadata or {}).get(b"pandas")
    if raw is None:
        return {}
    try:
        meta = json.loads(raw)
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def read_pandas(path, columns: Sequence[str] | None = None, filter=None, *, use_threads: bool = True,
                filesystem=None, fetch=None):
    """The rows of the rcfmt file or dataset at ``path`` (a local path or an object-store
    URI; matching ``filter``; only ``columns``, plus the index) as a
    ``pandas.DataFrame``, with the index, nullable dtypes and categoricals the writer's
    DataFrame had. ``fetch``: :class:`rcfmt.FetchOptions` for remote reads."""
    from ..dataset import Dataset
    from ..errors import InvalidOptionError
    from ..file.reader import RcfmtFile
    from ..scan.positions import free_position_name
    from ..storage import DirectoryError
    from .arrow import CATEGORIES_KEY, with_range_index_columns

    if columns is not None:  # ('af' is no ['a', 'f']; a pandas Index or numpy array of names is)
        if isinstance(columns, (str, bytes, set, frozenset, dict)) or not isinstance(columns, Iterable):
            raise InvalidOptionError(f"columns must be a list of column names, got {columns!r}")
        columns = list(columns)
    try:
        f = RcfmtFile(path, filesystem=filesystem, fetch=fetch)  # one open: the schema, then the rows
    except DirectoryError:
        if filesystem is not None:
            raise
        # a dataset (no pandas metadata in datasets yet: the rows as they are)
        return Dataset.open(path).read(columns=columns, filter=filter, use_threads=use_threads,
                                       fetch=fetch).to_pandas()
    with f:
        meta, meta_schema = _pandas_metadata(f.schema), f.schema.metadata
        names = f.schema.names
        levels = meta.get("index_columns", [])
        index_columns = [c for c in levels if isinstance(c, str) and c in names]
        described = [c for c in meta.get("columns", [])
                     if isinstance(c, dict) and c.get("pandas_type") == "categorical"]
        categorical = [c.get("field_name") for c in described]
        ordered = {c.get("field_name") for c in described if isinstance(c.get("metadata"), dict)
                   and c["metadata"].get("ordered") is True}
        wanted = None if columns is None else list(dict.fromkeys([*columns, *index_columns]))
        read_dictionary = [c for c in categorical if c in names and (wanted is None or c in wanted)]
        # a RangeIndex is stored as its bounds: the labels of the rows a filter keeps come
        # from their positions (pandas would number them afresh from 0)
        labelled = filter is not None and any(isinstance(c, dict) and c.get("kind") == "range" for c in levels)
        position = free_position_name(names)
        table = f.read(wanted, filter, use_threads=use_threads, read_dictionary=read_dictionary or None,
                       with_row_position=position if labelled else False)
    if labelled:
        positions = table.column(position).to_numpy()
        table = with_range_index_columns(table.drop_columns([position]), positions)
    for name in read_dictionary:  # categories sorted (as pandas infers them), ordered as written
        i = table.schema.get_field_index(name)
        table = table.set_column(i, name, _sorted_categories(table.column(i), name in ordered))
    return _written_categories(table.to_pandas(), (meta_schema or {}).get(CATEGORIES_KEY))


def _written_categories(frame, raw):
    """``frame`` whose categorical columns have the categories, in their order, the
    writer's DataFrame had (recorded by :func:`rcfmt.interop.arrow.as_table`), where they
    hold every value read (a filtered read's are those of the rows it kept)."""
    if raw is None:
        return frame
    try:
        stored = json.loads(raw)
    except ValueError:
        return frame
    names = list(frame.columns)
    for name, categories in (stored.items() if isinstance(stored, dict) else ()):
        if names.count(name) != 1 or not isinstance(categories, list) or \
                getattr(frame[name].dtype, "name", None) != "category":
            continue
        try:
            if set(frame[name].cat.categories) <= set(categories):
                frame[name] = frame[name].cat.set_categories(categories)
        except (TypeError, ValueError):  # (unhashable or mixed categories: as read)
            continue
    return frame


def _sorted_categories(column, ordered: bool):
    """Dictionary column ``column`` with its entries sorted (as they were when they do
    not sort) and the type's ``ordered`` flag set, which pandas' Categorical follows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.unify_dictionaries()
    chunks = []
    for chunk in column.chunks:
        dictionary, indices = chunk.dictionary, chunk.indices
        try:
            order = pc.sort_indices(dictionary).to_numpy()
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
            order = np.arange(len(dictionary))
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        nulls = indices.is_null().to_numpy(zero_copy_only=False)
        codes = pa.array(rank[indices.fill_null(0).to_numpy()], indices.type, mask=nulls)
        chunks.append(pa.DictionaryArray.from_arrays(codes, dictionary.take(pa.array(order)), ordered=ordered))
    if not chunks:
        return pa.chunked_array([], pa.dictionary(column.type.index_type, column.type.value_type, ordered))
    return pa.chunked_array(chunks)
