"""run_end_encoded nested values holding run_end_encoded values inside extension types
(issue 61's last shape: ``run_end_encoded<int32, ext<struct<r: run_end_encoded<...>>>>``,
an extension over a run_end_encoded struct under runs, a flat extension over runs in a
struct under runs, with unions and extensions inside extensions), and what makes them
possible: Arrow's take has no kernel for run_end_encoded arrays anywhere in a type
(:mod:`rcfmt.schema.gather` takes them), and pyarrow's type equality overlooks the values
of such run_end_encoded types (:func:`rcfmt.schema.types.same_type`).

Random round trips against the input (values built level by level, :mod:`arrow_values`),
a filter on a flat column beside them against the rows it keeps, the footer's keys and
required feature, an older reader and another interpreter, and the gather against the
same values."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import rcfmt
import strategies as S
from rcfmt import col
from rcfmt.errors import CorruptFileError, UnsupportedError
from rcfmt.schema.arrow_io import filter_rows, take
from rcfmt.schema.gather import holds_runs
from rcfmt.schema.nested_storage import is_nested, storage_type
from rcfmt.schema.types import same_type
from arrow_values import py_values
from schema.test_last_shapes import SETTINGS, Cat, arrays_of, cat, chunked, round_trip, types_with, write_options
from schema.test_nested import _footer_json, _rewrite_footer_json

RUN_ENDS = st.sampled_from([pa.int16(), pa.int32(), pa.int64()])
FLAT = st.sampled_from([pa.int32(), pa.string(), pa.bool_(), pa.decimal128(9, 2)])
#: leaves holding runs: run_end_encoded flat values, an extension over them
RUN_LEAVES = st.one_of(
    st.tuples(RUN_ENDS, FLAT).map(lambda a: pa.run_end_encoded(*a)),
    st.tuples(RUN_ENDS, FLAT).map(lambda a: Cat(pa.run_end_encoded(*a), "flat")),
)


def _storages():
    """Nested extension storages holding runs somewhere: in a field, an item, a map
    value, a union child, a flat extension over runs, an inner extension, or a
    run_end_encoded nested type itself."""
    nested = types_with(st.one_of(FLAT, RUN_LEAVES), 4).filter(
        lambda t: pa.types.is_nested(t) and holds_runs(t)).map(_nullable)
    return st.one_of(nested, st.tuples(RUN_ENDS, nested).map(lambda a: pa.run_end_encoded(*a)),
                     nested.map(lambda t: pa.struct([("x", Cat(t, "inner")), ("i", pa.int8())])))


@st.composite
def _run_values(draw) -> pa.DataType:
    """The value type of the outer run_end_encoded type: an extension over a storage of
    :func:`_storages`, or a struct or list of one."""
    ext = Cat(draw(_storages()), "outer")
    return draw(st.sampled_from([ext, pa.struct([("e", ext), ("j", pa.int16())]), pa.list_(ext)]))


def _nullable(t: pa.DataType) -> pa.DataType:
    """``t`` with every field nullable (a non-nullable field of runs whose values hold
    NULLs is refused as any non-nullable field holding NULLs is: SchemaError)."""
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_nullable(f.type)).with_nullable(True) for f in t])
    if pa.types.is_union(t):
        return pa.union([f.with_type(_nullable(f.type)) for f in t], t.mode, list(t.type_codes))
    if pa.types.is_map(t):
        return pa.map_(t.key_type, pa.field(t.item_field.name, _nullable(t.item_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(pa.field("item", _nullable(t.value_type)), t.list_size)
    if pa.types.is_large_list(t):
        return pa.large_list(pa.field("item", _nullable(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(pa.field("item", _nullable(t.value_type)))
    if pa.types.is_run_end_encoded(t):
        return pa.run_end_encoded(t.run_end_type, _nullable(t.value_type))
    if isinstance(t, pa.BaseExtensionType):
        return Cat(_nullable(t.storage_type), t.tag)
    return t


def _types_in(t: pa.DataType):
    """``t`` and every type in it."""
    yield t
    if isinstance(t, pa.BaseExtensionType):
        yield from _types_in(t.storage_type)
    elif pa.types.is_run_end_encoded(t) or pa.types.is_dictionary(t):
        yield from _types_in(t.value_type)
    else:
        for i in range(t.num_fields):
            yield from _types_in(t.field(i).type)


def _bare_runs(t: pa.DataType) -> bool:
    """Whether a run_end_encoded type is in ``t`` other than behind an extension type."""
    if pa.types.is_run_end_encoded(t):
        return True
    return not isinstance(t, pa.BaseExtensionType) and any(_bare_runs(t.field(i).type) for i in range(t.num_fields))


def _strips_runs(values: pa.DataType) -> bool:
    """Whether run_end_encoded ``values`` hold an extension over a nested storage with
    runs in it (not behind another extension): stored as its values, declared
    (``extension_storage_runs``)."""
    return any(isinstance(x, pa.BaseExtensionType) and is_nested(storage_type(x.storage_type))
               and _bare_runs(x.storage_type) for x in _types_in(values))


def _valid_type(t: pa.DataType) -> bool:
    """No union without fields (no non-empty array of it is valid)."""
    if pa.types.is_union(t) and t.num_fields == 0:
        return False
    if isinstance(t, pa.BaseExtensionType):
        return _valid_type(t.storage_type)
    if pa.types.is_run_end_encoded(t) or pa.types.is_dictionary(t):
        return _valid_type(t.value_type)
    return all(_valid_type(t.field(i).type) for i in range(t.num_fields))


@settings(max_examples=S.examples(80), **SETTINGS)
@given(data=st.data())
def test_runs_in_extensions_under_runs_round_trip(tmp_path_factory, data):
    values = data.draw(_run_values().filter(_valid_type))
    # (an extension over flat runs directly: the column is flat, its type declares the storage)
    flat = isinstance(values, pa.BaseExtensionType) and pa.types.is_run_end_encoded(values.storage_type)
    t = pa.run_end_encoded(data.draw(RUN_ENDS), values)
    where = data.draw(st.sampled_from(["top", "top", "struct", "list"]))
    if where == "struct":
        t = pa.struct([("r", t), ("i", pa.int16())])
    elif where == "list":
        t = pa.list_(t)
    sizes = data.draw(st.lists(st.integers(0, 12), min_size=1, max_size=3))
    column = data.draw(chunked(t, sizes))
    n = sum(sizes)
    table = pa.table({"k": pa.array(np.arange(n, dtype=np.int64)), "r": column})
    note(f"type: {t!r}; storages: {[str(x.storage_type) for x in _types_in(t) if isinstance(x, Cat)]}")
    back, path = round_trip(tmp_path_factory, table, data.draw(write_options()))
    # (the values, not Table.equals, which compares a run_end_encoded child under a NULL struct slot
    # too; nor pyarrow's to_pylist, which crashes on some of these valid arrays: py_values)
    assert same_type(back.schema.field("r").type, t) and back.schema == table.schema
    assert py_values(back["r"]) == py_values(table["r"])
    doc = _footer_json(path)
    features = set(doc["required_features"])
    stripped = _strips_runs(values)
    assert ("extension_storage_runs" in features) == stripped
    assert not stripped or {"nested_run_end_encoded", "extension_storage"} <= features
    assert not flat or "extension_storage" in features  # (a flat extension over runs: its storage declared)
    if n:
        half = data.draw(st.integers(0, n))
        got = rcfmt.read_table(path, filter=col("k") < half, columns=["r"])
        assert got.schema == table.select(["r"]).schema
        assert py_values(got["r"]) == py_values(table["r"])[:half]  # (k ascends: Arrow filters no runs)


def _issue_shape() -> pa.Array:
    """run_end_encoded<int32, cat<struct<r: run_end_encoded<int32, int64>, s: string>>>:
    rows {7, a} x2, NULL, {8, b} x3 (the inner runs cross the outer ones)."""
    inner = pa.RunEndEncodedArray.from_arrays(pa.array([2, 4], pa.int32()), pa.array([7, 8], pa.int64()))
    storage = pa.StructArray.from_arrays([inner, pa.array(["a", "x", "b", "b"])], names=["r", "s"],
                                         mask=pa.array([False, True, False, False]))
    values = cat(storage).slice(0, 4)
    return pa.RunEndEncodedArray.from_arrays(pa.array([2, 3, 6], pa.int32()), pa.concat_arrays(
        [values.slice(0, 2), values.slice(3, 1)]))


def test_the_issue_shape_by_hand(tmp_path):
    arr = _issue_shape()
    arr.validate(full=True)
    table = pa.table({"k": pa.array(np.arange(6)), "r": arr})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=4)
    back = rcfmt.read_table(path)
    back.validate(full=True)
    assert back.schema == table.schema and back.equals(table)
    assert back["r"].to_pylist() == [{"r": 7, "s": "a"}] * 2 + [None] + [{"r": 8, "s": "b"}] * 3
    node = _footer_json(path)["nested"][1]
    assert node["run_end_encoded"] == "int32" and node["extension_name"] == "rcfmt.test.cat"
    assert node["arrow_storage"]["fields"][0]["type"] == "run_end_encoded"  # (declared: with its runs)
    assert [c["kind"] for c in node["children"]] == ["leaf", "leaf"]  # (stored: the values, a slot per row)
    assert _footer_json(path)["required_features"] == [
        "nested", "nested_extensions", "nested_run_end_encoded", "extension_storage", "extension_storage_runs"]
    got = rcfmt.read_table(path, filter=col("k") >= 2)
    assert got.equals(table.slice(2))


def test_an_extension_over_a_run_end_encoded_struct_under_runs(tmp_path):
    """run_end_encoded<int32, cat<run_end_encoded<int16, struct<a>>>>: two levels of runs
    with an extension between them; its storage is declared, its values stored."""
    inner = pa.RunEndEncodedArray.from_arrays(pa.array([1, 3], pa.int16()), pa.array([{"a": 1}, {"a": 2}]))
    arr = pa.RunEndEncodedArray.from_arrays(pa.array([2, 5], pa.int32()), cat(inner).slice(1, 2))
    table = pa.table({"r": arr})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path)
    back = rcfmt.read_table(path)
    back.validate(full=True)
    assert back.schema == table.schema and back.equals(table)
    assert back["r"].to_pylist() == [{"a": 2}] * 5
    assert _footer_json(path)["nested"][0]["arrow_storage"]["type"] == "run_end_encoded"


def test_a_flat_extension_over_runs_in_a_struct_under_runs(tmp_path):
    flat = cat(pa.RunEndEncodedArray.from_arrays(pa.array([2, 3], pa.int32()), pa.array(["p", None])), "flat")
    values = pa.StructArray.from_arrays([flat, pa.array([1, 2, 3], pa.int8())], names=["e", "i"])
    arr = pa.RunEndEncodedArray.from_arrays(pa.array([3, 4, 6], pa.int64()), values)
    table = pa.table({"r": arr, "k": pa.array(np.arange(6))})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, page_rows=2)
    back = rcfmt.read_table(path)
    back.validate(full=True)
    assert back.schema == table.schema and back.equals(table)
    want = [k for k, v in enumerate(table["r"].to_pylist()) if v["i"] >= 2]
    assert rcfmt.read_table(path, filter=col("r.i") >= 2)["k"].to_pylist() == want
    assert "extension_storage_runs" not in _footer_json(path)["required_features"]  # (a leaf type, §3.1)


def test_an_older_reader_refuses_by_feature_name(tmp_path, monkeypatch):
    from rcfmt.format import footer

    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"r": _issue_shape()}), path)
    monkeypatch.setattr(footer, "KNOWN_FEATURES", footer.KNOWN_FEATURES - {"extension_storage_runs"})
    with pytest.raises(UnsupportedError, match="extension_storage_runs"):
        rcfmt.read_table(path)


@pytest.mark.parametrize("change, match", [
    (lambda d: d.update(required_features=[f for f in d["required_features"] if f != "extension_storage_runs"]),
     "extension_storage_runs"),
    (lambda d: d["nested"][0].update(arrow_storage={"type": "struct", "fields": [
        {"name": "r", "nullable": True, "type": "run_end_encoded", "run_ends": "int32", "values": {"type": "int32"}},
        {"name": "s", "nullable": True, "type": "string"}]}), "not stored as"),
])
def test_forged_footers_are_corrupt_files(tmp_path, change, match):
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"r": _issue_shape()}), path, metadata={"pad": "x" * 400})
    _rewrite_footer_json(path, lambda d: (change(d), d.update(metadata=[])))
    with pytest.raises(CorruptFileError, match=match):
        rcfmt.read_table(path)


def test_another_interpreter_reads_the_decoded_storage(tmp_path):
    """Without the extension registered, the values read back as the stored storage (no
    runs inside), in their runs -- as for any unknown extension (README "Types")."""
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"r": _issue_shape()}), path)
    code = textwrap.dedent(f"""
        import rcfmt
        t = rcfmt.read_table({str(path)!r})
        t.validate(full=True)
        print(t.schema.field("r").type)
        print(t["r"].to_pylist())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "run_end_encoded<run_ends: int32, values: struct<r: int64, s: string>>"
    assert out[1] == str([{"r": 7, "s": "a"}] * 2 + [None] + [{"r": 8, "s": "b"}] * 3)


# ---------------------------------------------------------------------- the gather
@settings(max_examples=S.examples(120), **SETTINGS)
@given(data=st.data())
def test_take_of_arrays_holding_runs_anywhere(data):
    t = data.draw(st.one_of(RUN_LEAVES, types_with(st.one_of(FLAT, RUN_LEAVES), 4))
                  .filter(lambda t: holds_runs(t) and _valid_type(t)))
    if data.draw(st.booleans()):
        t = pa.run_end_encoded(data.draw(RUN_ENDS), t)
    n = data.draw(st.integers(1, 12))
    arr = data.draw(arrays_of(t, n + 2)).slice(1, n)
    arr.validate(full=True)
    indices = data.draw(st.lists(st.integers(0, n - 1), max_size=20))
    got = take(arr, np.asarray(indices, np.int64))
    got.validate(full=True)
    whole = py_values(arr)
    assert same_type(got.type, arr.type) and py_values(got) == [whole[i] for i in indices]
    mask = data.draw(st.lists(st.none() | st.booleans(), min_size=n, max_size=n))
    kept = filter_rows(pa.table({"a": arr}), pa.array(mask, pa.bool_()))
    kept.validate(full=True)
    assert py_values(kept["a"]) == [v for v, m in zip(whole, mask) if m]  # (NULL drops the row, as filter does)


def test_take_of_chunked_columns_and_tables_holding_runs():
    ree = pc.run_end_encode(pa.array([1, 1, 2, None, None, 3]))
    column = pa.chunked_array([ree.slice(0, 2), ree.slice(2)])
    table = pa.table({"r": column, "i": pa.array(np.arange(6))})
    got = take(table, pa.array([5, 0, 3, 3]))
    got.validate(full=True)
    assert got.to_pydict() == {"r": [3, 1, None, None], "i": [5, 0, 3, 3]}
    assert take(column, [2, 1]).to_pylist() == [2, 1]
    # runs from one physical run stay one run
    assert take(ree, np.arange(6)).run_ends.to_pylist() == ree.run_ends.to_pylist()


@pytest.mark.parametrize("values", [
    Cat(pa.struct([("u", pa.sparse_union([pa.field("r", pa.run_end_encoded(pa.int32(), pa.int8()))]))])),
    Cat(pa.struct([("c", Cat(pa.list_(pa.run_end_encoded(pa.int32(), pa.int8())), "inner"))])),
    pa.struct([("e", Cat(pa.run_end_encoded(pa.int16(), pa.int8()))), ("u", pa.dense_union([pa.field("i", pa.int8())]))]),
    Cat(pa.large_list(Cat(pa.run_end_encoded(pa.int16(), pa.int32()), "flat"))),
], ids=["union-in-extension", "extension-in-extension", "union-beside", "flat-in-extension"])
@settings(max_examples=S.examples(8), **SETTINGS)
@given(data=st.data())
def test_unions_and_inner_extensions_with_runs_under_runs(tmp_path_factory, values, data):
    """Once refused by name (session 35's first cut): runs inside extensions below runs,
    together with unions and extensions inside extensions; each round-trips."""
    t = pa.run_end_encoded(pa.int32(), values)
    table = pa.table({"r": data.draw(chunked(t, [7, 0, 5]))})
    back, _ = round_trip(tmp_path_factory, table, {"block_rows": 5, "page_rows": 2})
    assert back.schema == table.schema and py_values(back["r"]) == py_values(table["r"])


def test_same_type_sees_the_values_of_runs():
    """pyarrow 26 takes two run_end_encoded types whose values hold extension types for
    equal when only those values differ; rcfmt's comparison does not."""
    a = Cat(pa.int32(), "x")
    b = Cat(pa.run_end_encoded(pa.int16(), pa.int32()), "x")
    runs = lambda v: pa.run_end_encoded(pa.int16(), v)  # noqa: E731
    assert runs(pa.list_(a)) == runs(pa.list_(b))  # (pyarrow's answer: if this fails, pyarrow fixed it)
    assert not same_type(runs(pa.list_(a)), runs(pa.list_(b)))
    assert not same_type(runs(pa.large_list(a)), runs(pa.list_(a)))
    assert same_type(runs(pa.list_(a)), runs(pa.list_(Cat(pa.int32(), "x"))))
    assert not same_type(pa.list_(a), pa.list_(b))


def test_concatenation_of_chunks_holding_runs_and_dictionaries():
    """Chunks whose dictionaries differ, beside runs: joined with every value kept."""
    from rcfmt.schema.annotated import combine_chunks

    def chunk(codes, words, ends, values):
        d = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int8()), pa.array(words))
        r = pa.RunEndEncodedArray.from_arrays(pa.array(ends, pa.int16()), pa.array(values, pa.int8()))
        return pa.StructArray.from_arrays([d, r], ["d", "r"])

    parts = [chunk([0, None, 1], ["x", "y"], [3], [5]), chunk([1, 0], ["p", "q"], [1, 2], [6, 7])]
    joined = combine_chunks(pa.chunked_array([parts[0].slice(1), parts[1]]))
    joined.validate(full=True)
    assert py_values(joined) == [{"d": None, "r": 5}, {"d": "y", "r": 5}, {"d": "q", "r": 6}, {"d": "p", "r": 7}]


def test_a_writer_tells_such_types_apart(tmp_path):
    """A column of ``run_end_encoded<int16, large_list<cat<int32>>>`` for a writer of
    ``run_end_encoded<int16, list<cat<int32>>>``, which pyarrow finds equal: converted to
    the writer's type as any large_list column is (before: taken as it was, then refused
    as a block that "cannot be encoded again")."""
    values = pa.LargeListArray.from_arrays(pa.array([0, 2, 3], pa.int64()), cat(pa.array([1, 2, 3], pa.int32()), "x"))
    column = pa.RunEndEncodedArray.from_arrays(pa.array([1, 2], pa.int16()), values)
    want = pa.run_end_encoded(pa.int16(), pa.list_(Cat(pa.int32(), "x")))
    assert column.type == want  # (pyarrow's answer)
    path = tmp_path / "t.rcfmt"
    with rcfmt.Writer(path, pa.schema([("r", want)])) as w:
        w.write(pa.table({"r": column}))
    back = rcfmt.read_table(path)
    back.validate(full=True)
    assert same_type(back.schema.field("r").type, want) and py_values(back["r"]) == [[1, 2], [3]]
