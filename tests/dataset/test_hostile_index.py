"""A forged stats index must not make a reader read files outside the dataset root."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

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


def test_a_swapped_data_file_is_refused(setup, tmp_path):
    """A data file replaced by another valid rcfmt file is not read as the dataset's."""
    root, outside = setup
    ds = rcfmt.dataset(root)
    victim = ds.files[0].path
    os.replace(outside, victim)
    with pytest.raises(rcfmt.CorruptFileError, match="index records 3 rows") as info:
        rcfmt.dataset(root).to_table()
    assert os.path.basename(victim) in str(info.value)


def test_history_of_a_version_without_dataset_metadata(setup):
    root, _ = setup
    old = version_path(str(root), latest_version(str(root)))
    rcfmt.write_dataset(pa.table({"x": [4]}), root, mode="append")  # the latest stays valid
    with rcfmt.open(old) as f:
        table = f.read()
    os.remove(old)
    rcfmt.write_table(table.replace_schema_metadata(None), old)  # the rows, without rcfmt.dataset metadata
    ds = rcfmt.dataset(root)
    assert ds.num_rows == 4
    with pytest.raises(rcfmt.CorruptFileError, match="dataset metadata"):
        ds.history()


def test_cli_bounds_survive_forged_units_and_zones():
    from rcfmt.cli.describe import format_bound as _fmt_bound
    from rcfmt.types import LogicalType

    assert _fmt_bound(2**62, LogicalType("timestamp", unit="s")) == f"{2**62} (s)"
    assert _fmt_bound(0, LogicalType("timestamp", unit="us", tz="Not/AZone")) == "0 (us)"
    assert _fmt_bound(10, LogicalType("date32")) == "1970-01-11"


def test_an_older_version_copied_over_the_latest_is_refused(setup):
    """An index version whose recorded number or parent disagrees with its name (an older
    snapshot copied over the current one) is refused, not read as the latest."""
    root, _ = setup
    rcfmt.write_dataset(pa.table({"x": [4]}), root, mode="append")
    latest = latest_version(str(root))
    older = version_path(str(root), latest - 1)
    shutil.copyfile(older, version_path(str(root), latest))
    with pytest.raises(rcfmt.CorruptFileError, match=f"is version {latest} but records version {latest - 1}"):
        rcfmt.dataset(root)
    with pytest.raises(rcfmt.CorruptFileError, match="records version"):
        rcfmt.dataset(root, version=latest - 1).history()
    assert rcfmt.dataset(root, version=latest - 1).num_rows == 3  # the older version itself stays readable


def test_a_missing_data_file_is_a_corrupt_dataset(setup):
    root, _ = setup
    ds = rcfmt.dataset(root)
    os.remove(ds.files[0].path)
    with pytest.raises(rcfmt.CorruptFileError, match="listed in the dataset index is missing"):
        rcfmt.dataset(root).to_table()


def test_a_data_file_whose_type_disagrees_with_the_index_is_refused(tmp_path):
    """A data file whose footer was forged to another type of the same length (same size,
    same rows, checksums recomputed) is refused by name, not cast by Arrow."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
    import make_bad

    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"u": pa.array(range(10), pa.uint32()), "s": [str(i) for i in range(10)]}), root)
    path = rcfmt.dataset(root).files[0].path
    parts = make_bad.split_file(open(path, "rb").read())
    parts.doc["schema"][0]["type"] = "date32"
    forged = make_bad.build_file(parts)
    assert len(forged) == os.path.getsize(path)
    open(path, "wb").write(forged)
    for read in (lambda: rcfmt.dataset(root).to_table(), lambda: rcfmt.dataset(root).to_table(filter=rcfmt.col("u") > 3)):
        with pytest.raises(rcfmt.CorruptFileError, match="holds date32 values where the dataset has uint32") as info:
            read()
        assert info.value.column == "u" and info.value.path == path


def test_partition_values_cannot_escape_their_directory(tmp_path):
    """Values with separators and dot-dot stay one escaped directory under the root."""
    root = tmp_path / "ds"
    values = ["../../evil", "a/b", "..", "/abs", "x\\y"]
    rcfmt.write_dataset(pa.table({"p": values, "x": list(range(5))}), root, partition_by=["p"])
    files = [p for p in tmp_path.rglob("*.rcfmt") if "_rcfmt" not in p.parts]
    assert len(files) == 5
    for f in files:
        assert f.parent.parent == root and f.parent.name.startswith("p=")
    assert sorted(rcfmt.dataset(root).to_table()["p"].to_pylist()) == sorted(values)
