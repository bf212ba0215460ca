"""A forged stats index must not make a reader read files outside the dataset root."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

import rcfmt
from rcfmt.dataset.log import latest_version, version_path


def _forge_paths(root, new_path):
    """Rewrite the latest index version so its first file entry points at ``new_path``."""
    path = version_path(str(root), latest_version(str(root)))
    with rcfmt.open(path) as f:
        table, metadata = f.read(), f.metadata
    paths = table.column("path").to_pylist()
    paths[0] = new_path
    table = table.set_column(table.schema.get_field_index("path"), "path", pa.array(paths, table.schema.field("path").type))
    os.remove(path)
    rcfmt.write_table(table, path, metadata=metadata)


@pytest.fixture
def setup(tmp_path):
    outside = tmp_path / "outside.rcfmt"
    rcfmt.write_table(pa.table({"x": [666, 667]}), outside)
    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"x": [1, 2, 3]}), root)
    return root, outside


@pytest.mark.parametrize("forged", ["../outside.rcfmt", "ABS", "a/../../outside.rcfmt", "./x.rcfmt", "a//b.rcfmt", ""])
def test_index_paths_leaving_the_root_are_refused(setup, forged):
    root, outside = setup
    _forge_paths(root, str(outside) if forged == "ABS" else forged)
    with pytest.raises(rcfmt.CorruptFileError, match="dataset root|empty"):
        rcfmt.dataset(root).to_table()


def test_symlink_pointing_out_of_the_root_is_refused(setup):
    root, outside = setup
    os.symlink(outside, root / "link.rcfmt")
    _forge_paths(root, "link.rcfmt")
    with pytest.raises(rcfmt.CorruptFileError, match="outside the dataset root"):
        rcfmt.dataset(root).to_table()


def test_ordinary_dataset_still_reads(setup):
    root, _ = setup
    assert sorted(rcfmt.dataset(root).to_table().column("x").to_pylist()) == [1, 2, 3]
