"""Sparse and dense unions, at the top level and nested (list<union>, struct<union>),
round-tripped exactly: the Arrow type (mode, type codes, fields), every slot's chosen
value, through whole reads, selections, batches and datasets. A union is stored as the
type code of every slot (int8) and each child at every slot (NULL where another child is
chosen): docs/FORMAT.md §3a."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
from rcfmt import col
from rcfmt.errors import CorruptFileError, FilterError, InvalidDataError, SchemaError
from strategies import examples

SETTINGS = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
CHILD_TYPES = [pa.int64(), pa.string(), pa.float64(), pa.bool_(), pa.struct([("a", pa.int32())]),
               pa.list_(pa.int16())]


def _values(draw, t: pa.DataType, n: int) -> pa.Array:
    def one():
        if pa.types.is_integer(t):
            return draw(st.integers(-1000, 1000))
        if pa.types.is_floating(t):
            return draw(st.floats(allow_nan=True, width=64))
        if pa.types.is_boolean(t):
            return draw(st.booleans())
        if pa.types.is_string(t):
            return draw(st.text(max_size=5))
        if pa.types.is_struct(t):
            return {"a": draw(st.none() | st.integers(-5, 5))}
        return draw(st.lists(st.none() | st.integers(-9, 9), max_size=3))
    return pa.array([None if draw(st.booleans()) and draw(st.booleans()) else one() for _ in range(n)], t)


@st.composite
def unions(draw, n: int) -> pa.Array:
    k = draw(st.integers(1, 4))
    types = [draw(st.sampled_from(CHILD_TYPES)) for _ in range(k)]
    codes = draw(st.lists(st.integers(0, 127), min_size=k, max_size=k, unique=True))
    names = [f"c{i}" for i in range(k)]
    pad = draw(st.integers(0, 3))
    chosen = np.array([draw(st.sampled_from(codes)) for _ in range(n + pad)], np.int8)
    ids = pa.array(chosen, pa.int8())
    if draw(st.booleans()):  # sparse: every child at every slot
        arr = pa.UnionArray.from_sparse(ids, [_values(draw, t, n + pad) for t in types], names, codes)
    else:  # dense: each child holds the slots that chose it (and maybe some no slot uses)
        offsets = np.zeros(n + pad, np.int32)
        children = []
        for code, t in zip(codes, types):
            mine = chosen == code
            extra = draw(st.integers(0, 2))
            offsets[mine] = np.arange(int(mine.sum()), dtype=np.int32) + extra
            children.append(_values(draw, t, int(mine.sum()) + extra))
        arr = pa.UnionArray.from_dense(ids, pa.array(offsets, pa.int32()), children, names, codes)
    return arr.slice(pad) if pad else arr


@st.composite
def tables(draw) -> pa.Table:
    n = draw(st.integers(0, 40))
    u = draw(unions(n))
    out = {"id": pa.array(np.arange(n)), "u": u}
    if draw(st.booleans()):  # a union under a struct and in a list
        out["s"] = pa.StructArray.from_arrays([draw(unions(n))], names=["v"])
        lengths = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int32) if n else \
            np.zeros(0, np.int32)
        total = int(lengths.sum())
        out["l"] = pa.ListArray.from_arrays(pa.array(np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)),
                                            draw(unions(total)))
    return pa.table(out)


def _nan_free(v):
    """``v`` with every float NaN replaced by a marker (NaN is not equal to itself)."""
    if isinstance(v, float) and v != v:
        return "NaN"
    if isinstance(v, list):
        return [_nan_free(x) for x in v]
    if isinstance(v, dict):
        return {k: _nan_free(x) for k, x in v.items()}
    return v


def _same(got: pa.Table, want: pa.Table) -> None:
    got.validate(full=True)
    assert got.schema == want.schema
    for name in want.column_names:  # (a union's unchosen slots are unspecified: compare what slots hold)
        assert _nan_free(got[name].to_pylist()) == _nan_free(want[name].to_pylist()), name


@SETTINGS
@given(table=tables(), block_rows=st.integers(1, 17), page_rows=st.integers(1, 9), data=st.data())
def test_unions_round_trip_exactly(tmp_path_factory, table, block_rows, page_rows, data):
    path = tmp_path_factory.mktemp("u") / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=block_rows, page_rows=page_rows)
    _same(rcfmt.read_table(path), table)
    lo = data.draw(st.integers(0, table.num_rows))
    hi = data.draw(st.integers(lo, table.num_rows))
    _same(rcfmt.read_table(path, filter=(col("id") >= lo) & (col("id") < hi)), table.slice(lo, hi - lo))
    with rcfmt.open(path) as f:
        batches = list(f.scan(["u", "id"]).iter_batches(5))
    got = pa.Table.from_batches(batches, schema=table.select(["u", "id"]).schema)
    _same(got, table.select(["u", "id"]))


def test_a_dataset_of_unions_and_the_type_it_reports(tmp_path):
    u = pa.UnionArray.from_dense(pa.array([7, 3, 7], pa.int8()), pa.array([0, 0, 1], pa.int32()),
                                 [pa.array(["a", None]), pa.array([2.5, None])], ["s", "f"], [3, 7])
    t = pa.table({"k": [1, 2, 3], "u": u})
    rcfmt.write_dataset(t, tmp_path / "ds")
    rcfmt.write_dataset(t, tmp_path / "ds")
    ds = rcfmt.dataset(tmp_path / "ds")
    assert ds.schema.field("u").type == u.type
    assert ds.to_table(filter=col("k") >= 2)["u"].to_pylist() == ["a", None, "a", None]


def test_filters_do_not_reach_into_unions(tmp_path):
    u = pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()), [pa.array([1, 2]), pa.array(["a", "b"])], ["i", "s"])
    rcfmt.write_table(pa.table({"u": u}), tmp_path / "t.rcfmt")
    with pytest.raises((FilterError, SchemaError), match="u.i"):
        rcfmt.read_table(tmp_path / "t.rcfmt", filter=col("u.i") == 1)


def test_a_union_without_fields_is_stored(tmp_path):
    """(Its arrays are empty: no type code exists. More in tests/schema/test_last_shapes.py.)"""
    empty = pa.Array.from_buffers(pa.sparse_union([]), 0, [None, pa.py_buffer(b"")], children=[])
    rcfmt.write_table(pa.table({"u": empty}), tmp_path / "t.rcfmt")
    assert rcfmt.read_table(tmp_path / "t.rcfmt").equals(pa.table({"u": empty}))


def test_an_unknown_type_code_in_a_file_is_corrupt(tmp_path, monkeypatch):
    """A type code the union does not declare (a forged page) is a located CorruptFileError."""
    from rcfmt.schema import nested

    u = pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()), [pa.array([1, 2]), pa.array(["a", "b"])], ["i", "s"])
    path = tmp_path / "t.rcfmt"
    real = nested._type_ids
    monkeypatch.setattr(nested, "_type_ids", lambda arr: pa.array([0, 9], pa.int8()))
    monkeypatch.setattr(nested, "_check_type_codes", lambda codes, node: None)  # (a writer refuses them)
    rcfmt.write_table(pa.table({"u": u}), path)
    monkeypatch.setattr(nested, "_type_ids", real)
    with pytest.raises(CorruptFileError, match="type code 9 in union 'u'"):
        rcfmt.read_table(path)


def test_a_dense_offset_outside_its_child_is_refused_at_write(tmp_path):
    ids = pa.array([0, 1, 0], pa.int8())
    bad = pa.Array.from_buffers(pa.dense_union([pa.field("i", pa.int64()), pa.field("s", pa.string())]), 3,
                                [None, ids.buffers()[1], pa.py_buffer(np.array([0, 0, 5], np.int32))],
                                children=[pa.array([1, 2]), pa.array(["a"])])
    with pytest.raises(InvalidDataError, match="offset lies outside its child 'i'") as info:
        rcfmt.write_table(pa.table({"u": bad}), tmp_path / "t.rcfmt")
    assert info.value.row == 2 and info.value.column == "u"
    assert not (tmp_path / "t.rcfmt").exists()


def test_cli_check_head_and_schema_show_unions(tmp_path, capsys):
    from rcfmt.cli import main

    u = pa.UnionArray.from_dense(pa.array([7, 3, 7], pa.int8()), pa.array([0, 0, 1], pa.int32()),
                                 [pa.array(["a", None]), pa.array([2.5, None])], ["s", "f"], [3, 7])
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"k": [1, 2, 3], "u": u}), path)
    assert main(["check", str(path)]) == 0
    assert main(["head", str(path)]) == 0
    assert main(["schema", str(path)]) == 0
    out = capsys.readouterr().out
    assert "ok:" in out and "dense_union<s: string=3, f: double=7>" in out
    assert [line.split()[1] for line in out.splitlines() if line[:1] in "123"] == ["2.5", "a", "null"]


def test_a_null_struct_over_a_union_child_writes_and_filters(tmp_path):
    """A struct with NULL slots and a union child: Arrow's ``StructArray.flatten`` gives
    the union a validity bitmap, on which pyarrow 26 aborts the process; the writer and
    a filter on the union's sibling take the children without it."""
    u = pa.UnionArray.from_sparse(pa.array([0, 1, 0, 1], pa.int8()), [pa.array([1, 2, 3, 4]), pa.array(list("abcd"))])
    s = pa.StructArray.from_arrays([u, pa.array([1, 2, 3, None])], names=["u", "x"],
                                   mask=pa.array([False, True, False, False]))
    table = pa.table({"s": s})
    path = tmp_path / "su.rcfmt"
    rcfmt.write_table(table, path, block_rows=2)
    assert rcfmt.read_table(path).equals(table)
    got = rcfmt.read_table(path, filter=col("s.x") >= 2)
    assert got.column(0).to_pylist() == [{"u": 3, "x": 3}]
    ds = rcfmt.write_dataset(table, tmp_path / "ds")
    assert ds.read(filter=col("s.x").is_null()).column(0).to_pylist() == [None, {"u": "d", "x": None}]


def test_a_null_struct_over_an_extension_of_a_union_does_not_abort(tmp_path):
    """The same abort, for a union under an extension type (found by
    tests/schema/test_runs_in_extensions.py): the extension's child is taken as it is too."""
    from extension_types import TaggedExtension, register

    @register
    class Tagged(TaggedExtension):
        NAME = "rcfmt.test.union_box"

    u = pa.UnionArray.from_sparse(pa.array([0, 1, 0], pa.int8()), [pa.array([1, 2, 3]), pa.array(list("abc"))])
    e = pa.ExtensionArray.from_storage(Tagged(u.type), u)
    s = pa.StructArray.from_arrays([e, pa.array([1, 2, 3], pa.int16())], names=["e", "j"],
                                   mask=pa.array([True, False, False]))
    table = pa.table({"s": s})
    path = tmp_path / "se.rcfmt"
    rcfmt.write_table(table, path)
    assert rcfmt.read_table(path).equals(table)
    assert rcfmt.read_table(path, filter=col("s.j") >= 2).column(0).to_pylist() == [{"e": "b", "j": 2}, {"e": 3, "j": 3}]


def _dictionary(ids, values):
    return pa.DictionaryArray.from_arrays(pa.array(ids, pa.int8()), pa.array(values))


@pytest.mark.parametrize("given, stored", [
    (pa.UnionArray.from_sparse(pa.array([0, 1, 0], pa.int8()), [pa.array([1, 2, 3]), _dictionary([0, 1, 0], ["y", "x"])]),
     pa.UnionArray.from_sparse(pa.array([0, 1, 0], pa.int8()), [pa.array([1, 2, 3]), pa.array(["y", "x", "y"])])),
    (pa.UnionArray.from_dense(pa.array([0, 1, 0], pa.int8()), pa.array([0, 0, 1], pa.int32()),
                              [pa.array([1, 2]), _dictionary([1], ["y", "x"])]),
     pa.UnionArray.from_dense(pa.array([0, 1, 0], pa.int8()), pa.array([0, 0, 1], pa.int32()),
                              [pa.array([1, 2]), pa.array(["x"])])),
    (pa.UnionArray.from_sparse(pa.array([1, 0], pa.int8()),
                               [pa.array([1, 2]), pa.array(["a", "b"], pa.string_view())]),
     pa.UnionArray.from_sparse(pa.array([1, 0], pa.int8()), [pa.array([1, 2]), pa.array(["a", "b"])])),
])
def test_dictionary_and_view_children_of_unions_are_stored_as_their_values(tmp_path, given, stored):
    """Arrow casts no union: a child stored otherwise (a dictionary, a view) is rebuilt
    under it (the write was refused with Arrow's 'Unsupported cast')."""
    for name, table in (("flat", pa.table({"u": given})),
                        ("struct", pa.table({"s": pa.StructArray.from_arrays([given], ["u"])}))):
        rcfmt.write_table(table, tmp_path / f"{name}.rcfmt")
        want = pa.table({"u": stored}) if name == "flat" else pa.table({"s": pa.StructArray.from_arrays([stored], ["u"])})
        assert rcfmt.read_table(tmp_path / f"{name}.rcfmt").equals(want)
