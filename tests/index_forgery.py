"""Test helpers: rewrite an index version's rows whatever its layout (a complete index,
or a changes version whose rows are an Arrow IPC stream inside one binary cell)."""
from __future__ import annotations

import os

import pyarrow as pa

import rcfmt
from rcfmt.dataset import changelog, log
from rcfmt.dataset.index import INDEX_METADATA_KEY


def edit_version_rows(root: str, version: int, edit) -> str:
    """Replace the index rows version ``version`` stores by ``edit(rows)`` (metadata
    kept); its path."""
    path = log.version_path(root, version)
    with rcfmt.open(path) as f:
        table, meta = f.read(), dict(f.metadata)
    import json

    if changelog.layout_of(json.loads(meta[INDEX_METADATA_KEY])) == changelog.CHANGES:
        change = changelog.read_change(table, path)
        table = changelog.change_table(changelog.Change(edit(change.rows), change.removed))
    else:
        table = edit(table)
    os.unlink(path)
    rcfmt.write_table(table, path, metadata={INDEX_METADATA_KEY: meta[INDEX_METADATA_KEY]})
    return path


def edit_version_info(root: str, version: int, edit) -> str:
    """Replace the version info (``rcfmt.dataset`` metadata) of version ``version`` by
    ``edit(info)`` (rows kept), written as commits write it (an edit that keeps the
    JSON's length keeps the file's size, which later versions' run entries check); its
    path."""
    import json

    from rcfmt.dataset.commits import index_write_options
    from rcfmt.dataset.index import dumps_info

    path = log.version_path(root, version)
    with rcfmt.open(path) as f:
        table, meta = f.read(), dict(f.metadata)
    info = edit(json.loads(meta[INDEX_METADATA_KEY]))
    os.unlink(path)
    rcfmt.write_table(table, path, metadata={INDEX_METADATA_KEY: dumps_info(info)},
                      **index_write_options(table, info))
    return path


def set_column(table: pa.Table, name: str, column, field: pa.Field | None = None) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, field if field is not None else table.schema.field(i), column)


def every_version_a_checkpoint(monkeypatch) -> None:
    """Make every commit write a complete index (tests of forged complete indexes)."""
    monkeypatch.setattr(changelog, "CHECKPOINT_MIN_ROWS", 0)
    monkeypatch.setattr(changelog, "CHECKPOINT_FRACTION", 0.0)
