"""Extension types over nested storage (issue 61; docs/FORMAT.md §3a "Extension types"):
a Python ``pyarrow.ExtensionType`` or a C++ one (``arrow.fixed_shape_tensor``) whose
storage is a struct, list, large_list, fixed_size_list, map or union -- at any depth --
is stored as its storage's nested field, the extension's name and metadata in its tree
node, and read back as the extension type when pyarrow has it registered or this
process wrote it, else as its storage type. Files with such nodes require the feature
``nested_extensions``; files without them are unchanged."""
from __future__ import annotations

import base64
import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
import strategies as S
from extension_types import TaggedExtension, register
from rcfmt import col
from rcfmt.errors import CorruptFileError, SchemaError, UnsupportedError
from schema.test_nested import _footer_json, _rewrite_footer_json, canonical, nested_arrays, nested_types

LEAVES = st.sampled_from([pa.int64(), pa.int32(), pa.uint8(), pa.string(), pa.float64(), pa.bool_(),
                          pa.decimal128(12, 2), pa.binary()])


@register
class Boxed(TaggedExtension):
    """A Python extension type over any storage, with metadata."""

    NAME, DEFAULT_TAG = "rcfmt.test.boxed", "box"


def _nested(t: pa.DataType) -> bool:
    return pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_large_list(t) \
        or pa.types.is_fixed_size_list(t) or pa.types.is_map(t) or pa.types.is_union(t)


def boxed(arr: pa.Array, tag: str = "box") -> pa.ExtensionArray:
    return pa.ExtensionArray.from_storage(Boxed(arr.type, tag), arr)


def plain(value):
    """Python values of an array or chunked array, extension arrays as their storage's."""
    if isinstance(value, pa.ChunkedArray):
        return [v for c in value.chunks for v in plain(c)]
    return canonical(value.to_pylist())


def assert_same(got: pa.Table, want: pa.Table) -> None:
    got.validate(full=True)
    assert got.schema == want.schema, (got.schema, want.schema)
    for name in want.column_names:
        assert plain(got[name]) == plain(want[name]), name


# ---------------------------------------------------------------------- random round trips
@st.composite
def placed(draw, storage: pa.DataType, n: int, where: str, tag: str):
    """``n`` values of an extension over ``storage``, placed ``where``: at the top or
    inside a list, a struct or a fixed_size_list, each level with NULLs."""
    if where == "top":
        return boxed(draw(nested_arrays(storage, n)), tag)
    if where == "fixed_size_list":
        inner = boxed(draw(nested_arrays(storage, 2 * n)), tag)
        return pa.FixedSizeListArray.from_arrays(inner, 2, mask=draw(_masks(n)))
    if where == "struct":
        inner = boxed(draw(nested_arrays(storage, n)), tag)
        other = pa.array(np.arange(n, dtype=np.int32))
        return pa.StructArray.from_arrays([other, inner], names=["o", "e"], mask=draw(_masks(n)))
    lengths = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    inner = boxed(draw(nested_arrays(storage, int(offsets[-1]))), tag)
    return pa.ListArray.from_arrays(pa.array(offsets), inner, mask=draw(_masks(n)))


@st.composite
def _masks(draw, n):
    if not n or draw(st.booleans()):
        return None
    return pa.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), pa.bool_())


@settings(max_examples=S.examples(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_extensions_of_nested_types_round_trip(tmp_path_factory, data):
    storage = data.draw(nested_types(LEAVES, max_leaves=4).filter(_nested))
    sizes = data.draw(st.lists(st.integers(0, 20), min_size=1, max_size=3))
    where = data.draw(st.sampled_from(["top", "list", "struct", "fixed_size_list"]))
    tag = data.draw(st.sampled_from(["box", "", "\x00meta"]))
    chunks, start = [], 0
    for n in sizes:
        arr = data.draw(placed(storage, n + 1, where, tag)).slice(1)  # (sliced parents)
        chunks.append((pa.array(np.arange(start, start + n, dtype=np.int64)), arr))
        start += n
    table = pa.table({"id": pa.chunked_array([i for i, _ in chunks], pa.int64()),
                      "x": pa.chunked_array([a for _, a in chunks], chunks[0][1].type)})
    path = tmp_path_factory.mktemp("e") / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=data.draw(st.sampled_from([3, 7, 64])),
                      page_rows=data.draw(st.sampled_from([2, 5, 1000])))
    with rcfmt.open(path) as f:
        assert f.schema.remove_metadata() == table.schema
        assert_same(f.read(), table)
        batches = list(f.iter_batches(batch_size=4))
        if batches:  # (pyarrow's empty_table has no empty list of extension values)
            assert_same(pa.Table.from_batches(batches, schema=f.schema), table)
        if f.num_rows:
            got = f.read(filter=col("id") >= f.num_rows // 2)
            # (ids ascend from 0: the rows kept are a slice -- pyarrow 26's filter and take
            # misread a sliced fixed_size_list of fixed_size_lists, two levels of offsets)
            assert_same(got, table.slice(f.num_rows // 2))
    assert "nested_extensions" in _footer_json(path)["required_features"]


# ---------------------------------------------------------------------- by hand
STORAGES = {
    "struct": pa.array([{"a": 1, "b": ["x", None]}, None, {"a": None, "b": None}, {"a": 4, "b": []}],
                       pa.struct([("a", pa.int64()), ("b", pa.list_(pa.string()))])),
    "list": pa.array([[1.5, None], None, [], [float("nan"), -0.0]], pa.list_(pa.float64())),
    "large_list": pa.array([[b"a"], None, [], [None]], pa.large_list(pa.binary())),
    "fixed_size_list": pa.array([[1, 2], None, [None, 4], [5, 6]], pa.list_(pa.int32(), 2)),
    "map": pa.array([[("k", 1)], None, [], [("a", None), ("b", 2)]], pa.map_(pa.string(), pa.int64())),
    "sparse_union": pa.UnionArray.from_sparse(pa.array([0, 1, 0, 1], pa.int8()),
                                              [pa.array([1, None, 3, 4]), pa.array(["a", "b", None, "d"])], ["i", "s"]),
    "dense_union": pa.UnionArray.from_dense(pa.array([1, 0, 0, 1], pa.int8()), pa.array([0, 0, 1, 1], pa.int32()),
                                            [pa.array([7, None]), pa.array(["p", None])], ["i", "s"]),
    "struct_of_extensions": pa.StructArray.from_arrays(
        [boxed(pa.array([[1], None, [], [2, 3]], pa.list_(pa.int8())), "inner"), pa.array(["a", "b", None, "d"])],
        names=["l", "s"], mask=pa.array([False, False, False, True])),
}


@pytest.mark.parametrize("name", list(STORAGES))
def test_each_nested_storage_reads_back_as_the_extension(tmp_path, name):
    storage = STORAGES[name]
    t = pa.table({"e": boxed(storage, "m\x01"), "k": pa.array([1, 2, 3, 4]),
                  "l": pa.ListArray.from_arrays(pa.array([0, 1, 1, 3, 4], pa.int32()), boxed(storage, "m\x01"))})
    path = tmp_path / "e.rcfmt"
    rcfmt.write_table(t, path, block_rows=3, page_rows=2)
    back = rcfmt.read_table(path)
    assert back.schema == t.schema and back.schema.field("e").type.tag == "m\x01"
    assert_same(back, t)
    assert_same(rcfmt.read_table(path, columns=["l", "e"]), t.select(["l", "e"]))
    assert_same(rcfmt.read_table(path, filter=col("k") > 2), t.slice(2))
    with rcfmt.open(path) as f:
        assert_same(f.read_block(1), t.slice(3))


def test_tree_node_json_and_required_feature(tmp_path):
    t = pa.table({"e": boxed(STORAGES["struct"], "tag")})
    rcfmt.write_table(t, tmp_path / "e.rcfmt")
    doc = _footer_json(tmp_path / "e.rcfmt")
    assert doc["required_features"] == ["nested", "nested_extensions"]
    node = doc["nested"][0]
    assert {k: v for k, v in node.items() if k != "children"} == {
        "name": "e", "nullable": True, "kind": "struct", "column": 0, "extension_name": "rcfmt.test.boxed",
        "extension_metadata": base64.b64encode(b"tag").decode()}
    assert [c["kind"] for c in node["children"]] == ["leaf", "list"]
    assert [c["name"] for c in doc["schema"]] == ["e", "e.a", "e.b", "e.b.item"]  # the storage's columns
    # a file without extensions keeps its tree and features
    rcfmt.write_table(pa.table({"s": STORAGES["struct"]}), tmp_path / "s.rcfmt")
    doc = _footer_json(tmp_path / "s.rcfmt")
    assert doc["required_features"] == ["nested"]
    assert "extension_name" not in json.dumps(doc["nested"])


def test_an_older_reader_refuses_by_name(tmp_path, monkeypatch):
    """A reader that does not know ``nested_extensions`` refuses the file by that name (it
    would otherwise read the storage and lose the type); a node kind this version does
    not know is refused by its name; extension keys without the feature, or on a leaf,
    are a corrupt file."""
    from rcfmt.format import footer

    t = pa.table({"e": boxed(STORAGES["fixed_size_list"])})
    for name in ("old", "kind", "nofeature", "leaf"):
        rcfmt.write_table(t, tmp_path / f"{name}.rcfmt")
    _rewrite_footer_json(tmp_path / "kind.rcfmt",
                         lambda d: d["nested"][0].update(kind="later_kind"))
    _rewrite_footer_json(tmp_path / "nofeature.rcfmt", lambda d: d.update(required_features=["nested"]))

    def to_leaf(doc):  # (the keys moved from the list to its item)
        node = doc["nested"][0]
        node["children"][0].update(extension_name=node.pop("extension_name"),
                                   extension_metadata=node.pop("extension_metadata"))

    _rewrite_footer_json(tmp_path / "leaf.rcfmt", to_leaf)
    with pytest.raises(UnsupportedError, match="later_kind"):
        rcfmt.read_table(tmp_path / "kind.rcfmt")
    with pytest.raises(CorruptFileError, match="nested_extensions"):
        rcfmt.read_table(tmp_path / "nofeature.rcfmt")
    with pytest.raises(CorruptFileError, match="extension keys"):
        rcfmt.read_table(tmp_path / "leaf.rcfmt")
    monkeypatch.setattr(footer, "KNOWN_FEATURES", frozenset({"nested", "duplicate_names"}))
    with pytest.raises(UnsupportedError, match="nested_extensions"):
        rcfmt.read_table(tmp_path / "old.rcfmt")


def test_another_process_reads_unregistered_ones_as_storage_and_tensors_as_themselves(tmp_path):
    tensor_t = pa.fixed_shape_tensor(pa.float32(), [2, 2], dim_names=["r", "c"], permutation=[1, 0])
    storage = pa.array([[1, 2, 3, 4], None, [5, 6, None, 8]], pa.list_(pa.float32(), 4))
    tensors = pa.ExtensionArray.from_storage(tensor_t, storage)
    t = pa.table({"b": boxed(STORAGES["struct"].slice(1)), "t": tensors})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(t, path, block_rows=2)
    back = rcfmt.read_table(path)
    assert back.schema == t.schema and back.schema.field("t").type == tensor_t
    assert_same(back, t)
    assert back["t"].combine_chunks().slice(0, 1).to_numpy_ndarray()[0].tolist() == [[1, 3], [2, 4]]  # (permuted)
    code = (f"import rcfmt; t = rcfmt.read_table({str(path)!r}); print(t.schema.field('b').type); "
            "print(t.schema.field('t').type); print(t['b'].to_pylist()[2]['b'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == str(STORAGES["struct"].type)  # (rcfmt.test.boxed is registered only here)
    assert out[1] == str(tensor_t)
    assert out[2] == "[]"


def test_an_unregistered_one_reads_back_as_itself_in_the_process_that_wrote_it(tmp_path):
    class Local(pa.ExtensionType):  # never registered
        def __init__(self, storage):
            super().__init__(storage, "rcfmt.test.local_nested")

        def __arrow_ext_serialize__(self):
            return b"local"

        @classmethod
        def __arrow_ext_deserialize__(cls, storage_type, serialized):
            return cls(storage_type)

    storage = STORAGES["map"]
    t = pa.table({"m": pa.ExtensionArray.from_storage(Local(storage.type), storage)})
    rcfmt.write_table(t, tmp_path / "l.rcfmt")
    back = rcfmt.read_table(tmp_path / "l.rcfmt")
    assert isinstance(back.schema.field("m").type, Local)
    assert_same(back, t)


def test_filters_and_projections_treat_the_extension_as_a_whole(tmp_path):
    t = pa.table({"e": boxed(STORAGES["struct"]), "k": pa.array([1, 2, 3, 4])})
    path = tmp_path / "e.rcfmt"
    rcfmt.write_table(t, path)
    with pytest.raises(SchemaError, match="e.a"):
        rcfmt.read_table(path, filter=col("e.a") == 1)
    with pytest.raises(SchemaError, match="unknown column 'e.a'"):
        rcfmt.read_table(path, columns=["e.a"])
    assert_same(rcfmt.read_table(path, filter=col("k") == 4, columns=["e"]), t.slice(3).select(["e"]))


def test_writer_streaming_and_datasets(tmp_path):
    t = pa.table({"k": pa.array([1, 2, 3, 4]), "e": boxed(STORAGES["map"]),
                  "t": pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(pa.int8(), [2]),
                                                      pa.array([[1, 2], None, [3, None], [4, 4]], pa.list_(pa.int8(), 2)))})
    with rcfmt.Writer(tmp_path / "w.rcfmt", t.schema, block_rows=3) as w:
        w.write(t)
        w.write(t.slice(1, 2))
    assert_same(rcfmt.read_table(tmp_path / "w.rcfmt"), pa.concat_tables([t, t.slice(1, 2)]))
    rcfmt.write_dataset(t, tmp_path / "ds", target_file_rows=2)
    rcfmt.write_dataset(t.slice(0, 1), tmp_path / "ds", mode="append")
    ds = rcfmt.dataset(tmp_path / "ds")
    assert ds.schema == t.schema
    got = ds.to_table(filter=col("k") <= 2)
    assert sorted(plain(got["k"])) == [1, 1, 2]
    want = {r["k"]: r for r in t.to_pylist()}
    assert all(canonical(r) == canonical(want[r["k"]]) for r in got.to_pylist())
    assert got.schema == t.schema


def test_storages_of_dictionaries_and_views_are_stored(tmp_path):
    """(Stored decoded, encoded again on read: tests/schema/test_last_shapes.py.)"""
    dict_storage = pa.StructArray.from_arrays([pa.array(["x", None, "x"]).dictionary_encode()], names=["a"])
    view_storage = pa.array([[1], None, [2, 3]], pa.list_view(pa.int8()))
    t = pa.table({"d": boxed(dict_storage), "v": boxed(view_storage)})
    rcfmt.write_table(t, tmp_path / "d.rcfmt")
    back = rcfmt.read_table(tmp_path / "d.rcfmt")
    assert back.schema == t.schema and back.equals(t)
