"""pandas DataFrames in and out, the way ``pyarrow.parquet`` does it.

Writing (``rcfmt.write_table(df, ...)``, ``write_dataset``) converts with
``pyarrow.Table.from_pandas``: the index is stored as columns (a ``RangeIndex`` as
metadata only) and the ``pandas`` schema metadata records the index, the column
order and each column's pandas dtype, nullable extension dtypes (``Int64``,
``boolean``, ``string``) and categoricals among them. rcfmt keeps that metadata.

Reading (:func:`read_pandas`) gives the DataFrame back: the index restored (its
columns read even when ``columns`` leaves them out), nullable dtypes restored from the
metadata, and categorical columns read as Arrow dictionaries so that they come back as
``pandas.Categorical`` with their categories sorted, as pandas infers them (the stored
metadata does not list them; an ordered one comes back ordered, by that sorted order,
not by the order it was written with). Datasets do not keep the pandas metadata
yet: a dataset's index columns come back as ordinary columns.
"""
from __future__ import annotations

import json
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
    from ..file.reader import RcfmtFile
    from ..scan.positions import ROW_POSITION
    from ..storage import DirectoryError

    try:
        f = RcfmtFile(path, filesystem=filesystem, fetch=fetch)  # one open: the schema, then the rows
    except DirectoryError:
        if filesystem is not None:
            raise
        # a dataset (no pandas metadata in datasets yet: the rows as they are)
        return Dataset.open(path).read(columns=columns, filter=filter, use_threads=use_threads,
                                       fetch=fetch).to_pandas()
    with f:
        meta = _pandas_metadata(f.schema)
        names = f.schema.names
        index_columns = [c for c in meta.get("index_columns", []) if isinstance(c, str) and c in names]
        described = [c for c in meta.get("columns", [])
                     if isinstance(c, dict) and c.get("pandas_type") == "categorical"]
        categorical = [c.get("field_name") for c in described]
        ordered = {c.get("field_name") for c in described if isinstance(c.get("metadata"), dict)
                   and c["metadata"].get("ordered") is True}
        wanted = None if columns is None else list(dict.fromkeys([*columns, *index_columns]))
        read_dictionary = [c for c in categorical if c in names and (wanted is None or c in wanted)]
        # a RangeIndex is stored as its bounds: the labels of the rows a filter keeps come
        # from their positions (pandas would number them afresh from 0)
        ranges = meta.get("index_columns", [])
        labelled = filter is not None and len(ranges) == 1 and isinstance(ranges[0], dict) \
            and ranges[0].get("kind") == "range" and ROW_POSITION not in names
        table = f.read(wanted, filter, use_threads=use_threads, read_dictionary=read_dictionary or None,
                       with_row_position=labelled)
    positions = None
    if labelled:
        positions = table.column(ROW_POSITION).to_numpy()
        table = table.drop_columns([ROW_POSITION])
    df = table.to_pandas()
    if positions is not None:
        import pandas as pd

        start, step = int(ranges[0].get("start", 0)), int(ranges[0].get("step", 1))
        df.index = pd.Index(start + step * positions, name=ranges[0].get("name"))
    for name in read_dictionary:  # categories in order of appearance: sorted, ordered as written
        if name in df.columns:
            try:
                df[name] = df[name].cat.reorder_categories(sorted(df[name].cat.categories))
            except TypeError:  # categories that do not sort stay as they are
                pass
            if name in ordered:
                df[name] = df[name].cat.as_ordered()
    return df
