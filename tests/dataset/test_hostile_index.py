"""A forged stats index must not make a reader read files outside the dataset root."""
from __future__ import annotations

import os
import re
import sys
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import rcfmt
from rcfmt.dataset.log import latest_version, version_path
from index_forgery import edit_version_info, every_version_a_checkpoint


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


@pytest.fixture(autouse=True)
def _complete_indexes(monkeypatch):
    """These tests forge complete index versions: every commit here writes one
    (forged changes versions: tests/dataset/test_changelog.py)."""
    every_version_a_checkpoint(monkeypatch)


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


def test_a_symlinked_directory_below_the_root_is_resolved(setup, tmp_path):
    """A directory below the root that is a symlink is resolved like a linked file: out
    of the root it is refused; a root reached through a symlink, or a link to a file
    inside the root, reads."""
    root, outside = setup
    os.symlink(tmp_path, root / "a=1")
    _forge_paths(root, f"a=1/{outside.name}")
    with pytest.raises(rcfmt.CorruptFileError, match="outside the dataset root"):
        rcfmt.dataset(root).to_table()
    inside = tmp_path / "ds2"
    rcfmt.write_dataset(pa.table({"x": [1, 2, 3]}), inside)
    os.symlink(inside, tmp_path / "alias")
    assert sorted(rcfmt.dataset(tmp_path / "alias").to_table().column("x").to_pylist()) == [1, 2, 3]
    name = rcfmt.dataset(inside).files[0].path
    os.symlink(name, inside / "same.rcfmt")
    _forge_paths(inside, "same.rcfmt")
    assert sorted(rcfmt.dataset(inside).to_table().column("x").to_pylist()) == [1, 2, 3]


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
    from rcfmt.schema.types import LogicalType

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


# ---- forged index columns: every leak from the loader is a CorruptFileError naming the version
def _forge_index_footer(root, edit) -> tuple[int, str]:
    """Apply ``edit(parts)`` to the footer JSON of the latest index version (checksums
    recomputed by make_bad); its number and path."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
    import make_bad

    version = latest_version(str(root))
    path = version_path(str(root), version)
    parts = make_bad.split_file(open(path, "rb").read())
    edit(parts)
    open(path, "wb").write(make_bad.build_file(parts))
    return version, path


def _forge_index_column(root, name, column) -> tuple[int, str]:
    """Rewrite the latest index version with column ``name`` replaced (rows otherwise
    the same, metadata kept)."""
    version = latest_version(str(root))
    path = version_path(str(root), version)
    with rcfmt.open(path) as f:
        table, metadata = f.read(), f.metadata
    i = table.schema.get_field_index(name)
    table = table.set_column(i, pa.field(name, column.type, True), column)
    os.remove(path)
    rcfmt.write_table(table, path, metadata=metadata)
    return version, path


@pytest.fixture
def lineitem(tmp_path):
    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"l_shipmode": ["AIR", "RAIL", "SHIP", "AIR"], "l_quantity": [1, 5, 9, 3],
                                  "p": [1, 1, 2, 2]}), root, partition_by=["p"])
    return root


def _rename(name, new, *, tree):
    def edit(parts):
        parts.doc["schema"][parts.column(name)]["name"] = new
        if tree:  # the nested tree names it too (the index's list columns make it nested)
            for node in parts.doc["nested"]:
                if node["name"] == name:
                    node["name"] = new
    return edit


def _retype(name, t):
    def edit(parts):
        parts.doc["schema"][parts.column(name)]["type"] = t
    return edit


def _reads():
    return {
        "files": lambda ds: ds.files,
        "filter": lambda ds: ds.to_table(filter=rcfmt.col("l_quantity") > 4),
        "point": lambda ds: ds.to_table(filter=rcfmt.col("l_quantity") == 5),  # (distinct values too)
        "string filter": lambda ds: ds.to_table(filter=rcfmt.col("l_shipmode") == "RAIL"),
        "partition filter": lambda ds: ds.to_table(filter=rcfmt.col("p") == 1),
    }


@pytest.mark.parametrize("forgery, match", [
    # the issue's case: a stats column renamed in the footer's schema (the nested tree
    # then names a column that is not there: the file itself is refused)
    pytest.param(_rename("l_shipmode.min", "l_shipmode.mix", tree=False), "nested node 'l_shipmode.min'", id="stats-renamed-schema-only"),
    pytest.param(_rename("l_shipmode.min", "l_shipmode.mix", tree=True), r"lacks the statistics columns \['l_shipmode.min'\]", id="stats-renamed"),
    pytest.param(_rename("l_quantity.null_count", "l_quantity.nulls", tree=True), "lacks the statistics columns", id="count-renamed"),
    pytest.param(_rename("l_quantity.values", "l_quantity.valuez", tree=True), "nested node 'l_quantity.valuez.item'", id="values-renamed"),
    pytest.param(_rename("path", "paths", tree=True), r"lacks the index columns \['path'\]", id="path-renamed"),
    pytest.param(_rename("num_rows", "rows", tree=True), r"lacks the index columns \['num_rows'\]", id="num_rows-renamed"),
    pytest.param(_rename("p.value", "p.values", tree=True), r"lacks the index columns \['p.value'\]", id="partition-renamed"),
    pytest.param(_retype("l_quantity.min", "uint64"), "'l_quantity.min' is uint64, the version's dataset schema makes it int64", id="min-retyped"),
    pytest.param(_retype("l_quantity.null_count", "float64"), "'l_quantity.null_count' is double", id="count-retyped"),
    pytest.param(_retype("l_shipmode.max", "string"), "'l_shipmode.max' is string, the version's dataset schema makes it binary", id="string-bound-retyped"),
    pytest.param(_retype("l_quantity.values.item", "float64"), r"'l_quantity.values' is list<item: double>", id="values-retyped"),
    pytest.param(_retype("num_rows", "float64"), "'num_rows' is double", id="num_rows-retyped"),
    pytest.param(_retype("size", "uint64"), "'size' is uint64", id="size-retyped"),
    pytest.param(_retype("p.value", "uint64"), "'p.value' is uint64", id="partition-retyped"),
])
def test_a_forged_index_footer_is_a_corrupt_file_naming_the_version(lineitem, forgery, match):
    version, path = _forge_index_footer(lineitem, forgery)
    refused = 0
    for read in _reads().values():
        try:
            read(rcfmt.dataset(lineitem))
        except rcfmt.CorruptFileError as exc:
            assert f"dataset index version {version}: " in str(exc) and exc.path == path
            assert re.search(match, str(exc)), str(exc)
            refused += 1
        # (any other exception fails the test: KeyError, SchemaError, ... leaked before)
    assert refused >= 1  # (those that do not load the forged column may read)


@pytest.mark.parametrize("tree", [False, True], ids=["schema-only", "schema-and-tree"])
def test_the_issue_case_dataset_files_over_a_renamed_stats_column(lineitem, tree):
    """Issue 36.4: ``Dataset.files`` raised ``KeyError: 'Column l_shipmode.min does not
    exist in schema'`` from the index loader (SchemaError when the nested tree was
    renamed too)."""
    rcfmt.write_dataset(pa.table({"l_shipmode": ["X"], "l_quantity": [7], "p": [3]}), lineitem)  # version 2
    version, path = _forge_index_footer(lineitem, _rename("l_shipmode.min", "l_shipmode.mix", tree=tree))
    assert version == 2
    with pytest.raises(rcfmt.CorruptFileError, match="dataset index version 2: ") as info:
        rcfmt.dataset(lineitem).files
    assert info.value.path == path
    assert rcfmt.dataset(lineitem, version=1).files  # the version before stays readable


@pytest.mark.parametrize("name, column", [
    ("l_quantity.null_count", pa.array([None, 0], pa.int64())),  # NULL counts read as numbers
    ("num_rows", pa.array([2, None], pa.int64())),
    ("l_quantity.min", pa.array([1.0, 3.0], pa.float64())),
    ("l_quantity.values", pa.array([["1"], None], pa.list_(pa.string()))),
])
def test_forged_index_columns_are_refused_by_name(lineitem, name, column):
    version, path = _forge_index_column(lineitem, name, column)
    with pytest.raises(rcfmt.CorruptFileError, match=re.escape(f"index column {name!r}")) as info:
        ds = rcfmt.dataset(lineitem)
        ds.files
        ds.to_table(filter=rcfmt.col("l_quantity") == 5)
    assert f"dataset index version {version}: " in str(info.value) and info.value.path == path


def test_the_unforged_index_reads(lineitem):
    ds = rcfmt.dataset(lineitem)
    assert len(ds.files) == 2
    assert ds.to_table(filter=rcfmt.col("l_quantity") == 5).column("l_shipmode").to_pylist() == ["RAIL"]


def test_a_forged_deletion_vector_size_is_refused_before_it_is_allocated(tmp_path):
    """A vector's declared size is bounded by the file's row count, which an index row
    can forge: the deletion file's own size is checked before a buffer of that size is
    made (a forged 40 GB vector was allocated, MemoryError or the OOM killer)."""
    import tracemalloc

    from rcfmt.dataset.deletions import DeletionVector, load

    dfile = tmp_path / "dv-x.rcdv"
    dfile.write_bytes(b"RCDV\x01\x00\x00\x00" + b"\0" * 64)
    dv = DeletionVector(cardinality=1, path=str(dfile), offset=8, size=40 * 10**9, crc32=0)
    tracemalloc.start()
    try:
        with pytest.raises(rcfmt.CorruptFileError, match="ends before the 40000000000 bytes"):
            load(dv, 10**12, cached=False)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()


def test_deletion_files_behind_a_link_out_of_the_dataset_are_refused(tmp_path):
    """``_rcfmt/deletions`` linked to a directory elsewhere: its vectors are not read (as
    data files and runs behind such links are not)."""
    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"id": pa.array(range(1000), pa.int64())}), root)
    rcfmt.dataset(root).delete(rcfmt.col("id").isin(list(range(0, 1000, 3))))  # a vector in a deletion file
    dv_dir = root / "_rcfmt" / "deletions"
    assert os.listdir(dv_dir)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(dv_dir, elsewhere)
    os.symlink(elsewhere, dv_dir)
    with pytest.raises(rcfmt.CorruptFileError, match="deletion file resolves to .*outside the dataset root"):
        rcfmt.dataset(root).read()


# ------------------------------------------------------------------ forged version info
def _raw_info(root, edit_raw) -> None:
    """Rewrite the latest version's ``rcfmt.dataset`` metadata as ``edit_raw(json text)``."""
    from rcfmt.dataset.index import INDEX_METADATA_KEY

    path = version_path(str(root), latest_version(str(root)))
    with rcfmt.open(path) as f:
        table, raw = f.read(), f.metadata[INDEX_METADATA_KEY]
    os.remove(path)
    raw = raw.decode() if isinstance(raw, bytes) else raw
    rcfmt.write_table(table, path, metadata={INDEX_METADATA_KEY: edit_raw(raw)})


@pytest.mark.parametrize("value", ["3", None, [3], True])
def test_a_format_version_that_is_no_integer_is_a_corrupt_file(setup, value):
    root, _ = setup
    edit_version_info(str(root), 1, lambda i: {**i, "format_version": value})
    for call in (lambda: rcfmt.dataset(root), lambda: rcfmt.dataset.vacuum(root, 0, dry_run=True)):
        with pytest.raises(rcfmt.CorruptFileError, match="dataset index version 1: .*format_version .* is not an int"):
            call()


def test_dataset_metadata_nested_thousands_deep_is_a_corrupt_file(setup):
    root, _ = setup
    _raw_info(root, lambda raw: raw.rstrip()[:-1] + ',"x":' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(rcfmt.CorruptFileError, match="dataset index version 1: malformed dataset metadata: nested"):
        rcfmt.dataset(root)
    with pytest.raises(rcfmt.CorruptFileError, match="nested too deeply"):
        rcfmt.dataset.vacuum(root, 0, dry_run=True)


@pytest.mark.parametrize("key, value", [("num_files", "x"), ("num_rows", -1), ("rows_deleted", 1.5),
                                        ("dropped_columns", 5), ("dropped_columns", [1]),
                                        ("clustering", {"columns": 5}), ("clustering", [1]),
                                        ("clustering", {"columns": ["x"], "curve": 3}), ("layout", ["changes"])])
def test_forged_info_keys_are_corrupt_files_for_readers_and_writers(setup, key, value):
    """Keys writers and ``rcfmt inspect`` compute with are checked where the info is
    read: every reader and writer gets the same CorruptFileError, not a TypeError."""
    root, _ = setup
    edit_version_info(str(root), 1, lambda i: {**i, key: value})
    match = f"dataset index version 1: malformed dataset metadata: {key}"
    for call in (lambda: rcfmt.dataset(root).read(),
                 lambda: rcfmt.write_dataset(pa.table({"x": [9]}), root, mode="append"),
                 lambda: rcfmt.dataset(root).evolve(add=[pa.field("z", pa.int32())]),
                 lambda: rcfmt.dataset.vacuum(root, 0, dry_run=True)):
        with pytest.raises(rcfmt.CorruptFileError, match=match):
            call()


def test_an_index_version_linked_out_of_the_root_is_refused(setup, tmp_path):
    """A version file that is a symlink (or under one) resolving outside the root is
    refused, as data files and runs are: a forged dataset must not read another's index."""
    root, _ = setup
    other = tmp_path / "elsewhere"
    shutil.copytree(root, other)
    v1 = version_path(str(root), 1)
    os.remove(v1)
    os.symlink(version_path(str(other), 1), v1)
    for call in (lambda: rcfmt.dataset(root), lambda: rcfmt.dataset(root).history()):
        with pytest.raises(rcfmt.CorruptFileError, match="index version file resolves to .*outside the dataset root"):
            call()
    os.remove(v1)
    inside = root / "kept.rcfmt.bak"  # (a link to a file inside the root reads)
    shutil.copyfile(version_path(str(other), 1), inside)
    os.symlink(inside, v1)
    assert rcfmt.dataset(root).num_rows == 3


def test_an_index_version_replaced_before_its_statistics_load_is_a_corrupt_file(tmp_path):
    """A version's statistics load on demand, from its index file reopened: if another
    index (of another commit, of the same size) was put at its path since, its
    statistics would be paired with this version's files and a filter would prune by
    them -- rows silently missing. It is a CorruptFileError naming the index file; a
    fresh open reads the index as it now is."""
    def table(offset):
        return pa.table({"id": pa.array(range(offset, offset + 600), pa.int64()), "p": [k % 3 for k in range(600)]})

    root, other = tmp_path / "a", tmp_path / "b"
    rcfmt.write_dataset(table(0), root, partition_by=["p"])
    rcfmt.write_dataset(table(7919), other, partition_by=["p"])
    mine, theirs = Path(version_path(str(root), 1)), Path(version_path(str(other), 1))
    assert mine.stat().st_size == theirs.stat().st_size and mine.read_bytes() != theirs.read_bytes()
    ds = rcfmt.dataset(root)  # (the file list loaded; no statistics yet)
    shutil.copyfile(theirs, mine)
    with pytest.raises(rcfmt.CorruptFileError, match="replaced after this version was opened") as info:
        ds.to_table(filter=rcfmt.col("id") < 100)
    assert str(mine) in str(info.value)
