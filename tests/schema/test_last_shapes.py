"""The last Arrow shapes rcfmt refused (issue 61): structs and unions without fields,
run_end_encoded nested values, and extension types whose storage is a dictionary or
holds dictionaries or views (docs/FORMAT.md §3.1, §3a). Random round trips with NULLs
at every level, several chunks, sliced inputs and small blocks and pages; filters on
the flat leaves beside and under them against pyarrow.compute and plain Python;
datasets, the streaming Writer, another interpreter; the footer's keys and required
features; what is still refused and invalid input."""
from __future__ import annotations

import base64
import json
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
import strategies as S
from extension_types import TaggedExtension, register
from rcfmt import col
from rcfmt.errors import CorruptFileError, InvalidDataError, SchemaError, UnsupportedError
from schema.test_nested import _footer_json, _rewrite_footer_json, canonical

FLAT = [pa.int32(), pa.int64(), pa.string(), pa.bool_(), pa.float64(), pa.binary(), pa.decimal128(9, 2)]
NAMES = st.sampled_from(["a", "b", "c", "x"])
SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck))


@register
class Cat(TaggedExtension):
    """A Python extension type over any storage, with metadata."""

    NAME, DEFAULT_TAG = "rcfmt.test.cat", "cat"


def cat(arr: pa.Array, tag: str = "cat") -> pa.ExtensionArray:
    return pa.ExtensionArray.from_storage(Cat(arr.type, tag), arr)


# ---------------------------------------------------------------------- values of any type
def _bits(draw, n: int, nullable: bool) -> tuple[pa.Buffer | None, np.ndarray]:
    """A validity bitmap (None: no NULL) and its bools."""
    if not nullable or not n or draw(st.booleans()):
        return None, np.ones(n, bool)
    valid = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    return pa.py_buffer(np.packbits(valid, bitorder="little")), valid


def _holds_values(t: pa.DataType) -> bool:
    """Whether a non-empty array of ``t`` can be valid (no union without fields in it,
    except under lists, which may be empty)."""
    if pa.types.is_union(t):
        return t.num_fields > 0 and all(_holds_values(f.type) for f in t)
    if pa.types.is_struct(t):
        return all(_holds_values(f.type) for f in t)
    if pa.types.is_fixed_size_list(t):
        return _holds_values(t.value_type)
    if pa.types.is_run_end_encoded(t) or pa.types.is_dictionary(t):
        return _holds_values(t.value_type)
    if isinstance(t, pa.BaseExtensionType):
        return _holds_values(t.storage_type)
    return True


@st.composite
def arrays_of(draw, t: pa.DataType, n: int, nullable: bool = True) -> pa.Array:
    """``n`` values of ``t`` (any type: structs and unions without fields, run_end_encoded,
    dictionary, view and extension types included), NULLs at every level where allowed,
    garbage under NULL structs and non-empty ranges under NULL lists."""
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, draw(arrays_of(t.storage_type, n, nullable)))
    if pa.types.is_dictionary(t):
        k = draw(st.integers(1, 4))
        dictionary = draw(arrays_of(t.value_type, k))
        codes = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
        mask = None if not nullable or draw(st.booleans()) else \
            pa.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), pa.bool_())
        return pa.DictionaryArray.from_arrays(pa.array(codes, t.index_type, mask=mask), dictionary)
    if pa.types.is_run_end_encoded(t):
        lengths = []
        while sum(lengths) < n:
            lengths.append(draw(st.integers(1, max(1, n - sum(lengths)))))
        values = draw(arrays_of(t.value_type, len(lengths)))
        return pa.RunEndEncodedArray.from_arrays(pa.array(np.cumsum(lengths, dtype=np.int64)).cast(t.run_end_type),
                                                 values)
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        plain = pa.string() if pa.types.is_string_view(t) else pa.binary()
        return draw(S.arrays(plain, n, nullable=nullable, sliced=True)).cast(t)
    if pa.types.is_struct(t):
        bits, _ = _bits(draw, n, nullable)
        kids = [draw(arrays_of(f.type, n, f.nullable)) for f in t]
        return pa.Array.from_buffers(t, n, [bits], children=kids)
    if pa.types.is_union(t):
        codes = np.array(draw(st.lists(st.sampled_from(list(t.type_codes)), min_size=n, max_size=n))
                         if n else [], np.int8)
        if t.mode == "sparse":
            kids = [draw(arrays_of(f.type, n)) for f in t]
            return pa.Array.from_buffers(t, n, [None, pa.py_buffer(codes)], children=kids)
        offsets = np.zeros(n, np.int32)
        kids = []
        for i, code in enumerate(t.type_codes):
            chosen = codes == code
            offsets[chosen] = np.arange(int(chosen.sum()), dtype=np.int32)
            kids.append(draw(arrays_of(t.field(i).type, int(chosen.sum()))))
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(codes), pa.py_buffer(offsets)], children=kids)
    if pa.types.is_fixed_size_list(t):
        bits, _ = _bits(draw, n, nullable)
        values = draw(arrays_of(t.value_type, n * t.list_size, t.value_field.nullable))
        return pa.Array.from_buffers(t, n, [bits], children=[values])
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t) or pa.types.is_list_view(t):
        bits, valid = _bits(draw, n, nullable)
        item = t.item_type if pa.types.is_map(t) else t.value_type
        most = 3 if _holds_values(item) else 0
        lengths = np.array(draw(st.lists(st.integers(0, most), min_size=n, max_size=n)), np.int64)
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        total = int(offsets[-1])
        width = np.int64 if pa.types.is_large_list(t) else np.int32
        if pa.types.is_map(t):
            entries = pa.StructArray.from_arrays([draw(arrays_of(t.key_type, total, False)),
                                                  draw(arrays_of(t.item_type, total, t.item_field.nullable))],
                                                 fields=[t.key_field, t.item_field])
            return pa.Array.from_buffers(t, n, [bits, pa.py_buffer(offsets.astype(np.int32))], children=[entries])
        values = draw(arrays_of(t.value_type, total, t.value_field.nullable))
        if pa.types.is_list_view(t):
            return pa.Array.from_buffers(t, n, [bits, pa.py_buffer(offsets[:-1].astype(np.int32)),
                                                pa.py_buffer(lengths.astype(np.int32))], children=[values])
        return pa.Array.from_buffers(t, n, [bits, pa.py_buffer(offsets.astype(width))], children=[values])
    return draw(S.arrays(t, n, nullable=nullable, sliced=True))


def types_with(leaves, max_leaves: int = 5, unions: bool = True):
    """Random nested types over ``leaves``: structs (without fields too), lists, large
    lists, fixed_size_lists, maps and (``unions``) sparse and dense unions."""
    def extend(inner):
        fields = st.lists(st.tuples(NAMES, inner, st.booleans()), min_size=0, max_size=3, unique_by=lambda f: f[0])
        kinds = [
            fields.map(lambda fs: pa.struct([pa.field(n, t, nl) for n, t, nl in fs])),
            st.tuples(inner, st.booleans()).map(lambda a: pa.list_(pa.field("item", a[0], a[1]))),
            inner.map(pa.large_list),
            st.tuples(inner, st.integers(1, 3)).map(lambda a: pa.list_(a[0], a[1])),
            st.tuples(st.sampled_from([pa.string(), pa.int32()]), inner).map(lambda kv: pa.map_(*kv)),
        ]
        if unions:
            kinds.append(st.tuples(st.lists(inner, min_size=1, max_size=2), st.sampled_from(["sparse", "dense"]))
                         .map(lambda a: pa.union([pa.field(f"u{i}", t) for i, t in enumerate(a[0])], a[1],
                                                 [3 * i + 1 for i in range(len(a[0]))])))
        return st.one_of(*kinds)

    return st.recursive(leaves, extend, max_leaves=max_leaves)


def nested_only(t: pa.DataType) -> bool:
    return pa.types.is_nested(t)


@st.composite
def chunked(draw, t: pa.DataType, sizes) -> pa.ChunkedArray:
    """Chunks of ``sizes`` rows of ``t``, each sliced out of a longer array."""
    chunks = []
    for n in sizes:
        arr = draw(arrays_of(t, n + 2))
        chunks.append(arr.slice(1, n))
    return pa.chunked_array(chunks, t)


@st.composite
def write_options(draw) -> dict:
    return {"block_rows": draw(st.sampled_from([1, 3, 7, 1000])), "page_rows": draw(st.sampled_from([1, 2, 5, 1000]))}


def plain(value) -> list:
    """Python values of an array, chunked array or table column (canonical floats)."""
    if isinstance(value, pa.ChunkedArray):
        return [v for c in value.chunks for v in plain(c)]
    return canonical(value.to_pylist())


def round_trip(tmp_path_factory, table: pa.Table, options: dict) -> pa.Table:
    path = tmp_path_factory.mktemp("s") / "t.rcfmt"
    rcfmt.write_table(table, path, **options)
    back = rcfmt.read_table(path)
    back.validate(full=True)
    return back, path


# ---------------------------------------------------------------------- 1. structs without fields
EMPTY_PLACES = [
    pa.struct([]),
    pa.list_(pa.struct([])),
    pa.struct([("e", pa.struct([])), ("i", pa.int32())]),
    pa.map_(pa.string(), pa.struct([])),
    pa.list_(pa.struct([]), 2),
    pa.large_list(pa.struct([("e", pa.struct([]))])),
    pa.sparse_union([pa.field("e", pa.struct([])), pa.field("i", pa.int8())]),
]


@settings(max_examples=S.examples(60), **SETTINGS)
@given(data=st.data())
def test_structs_without_fields_round_trip(tmp_path_factory, data):
    t = data.draw(st.one_of(st.sampled_from(EMPTY_PLACES),
                            types_with(st.sampled_from([pa.struct([]), pa.int32(), pa.string()]), 4)
                            .filter(lambda t: any(pa.types.is_struct(x) and not x.num_fields for x in _types_in(t)))))
    sizes = data.draw(st.lists(st.integers(0, 12), min_size=1, max_size=3))
    column = data.draw(chunked(t, sizes))
    n = sum(sizes)
    table = pa.table({"k": pa.array(np.arange(n, dtype=np.int64)), "e": column})
    back, path = round_trip(tmp_path_factory, table, data.draw(write_options()))
    assert back.schema == table.schema and back.equals(table)
    assert plain(back["e"]) == plain(table["e"])
    assert "empty_nested" in _footer_json(path)["required_features"]
    if n:
        half = n // 2
        got = rcfmt.read_table(path, filter=col("k") >= half)
        assert got.equals(table.filter(pc.greater_equal(table["k"], half)))


def test_structs_without_fields_by_hand(tmp_path):
    e = pa.array([{}, None, {}, {}])
    assert e.type == pa.struct([])
    dictionary = pa.DictionaryArray.from_arrays(pa.array([1, 0, None, 1], pa.int8()), pa.array([None, {}],
                                                                                                pa.struct([])))
    t = pa.table({"e": e, "k": [1, 2, 3, 4], "d": dictionary,
                  "s": pa.array([{"e": {}, "i": 1}, {"e": None, "i": 2}, None, {"e": {}, "i": None}],
                                pa.struct([("e", pa.struct([])), ("i", pa.int8())]))})
    path = tmp_path / "e.rcfmt"
    rcfmt.write_table(t, path, block_rows=3)
    back = rcfmt.read_table(path)
    want = t.set_column(2, "d", dictionary.dictionary.take(dictionary.indices))  # (read back as its values)
    assert back.equals(want) and back.schema == want.schema
    assert back["e"].to_pylist() == [{}, None, {}, {}] and back["d"].to_pylist() == [{}, None, None, {}]
    assert rcfmt.read_table(path, filter=col("s.i") >= 2, columns=["e", "s"]).to_pylist() == [
        {"e": None, "s": {"e": None, "i": 2}}]
    assert rcfmt.read_table(path, columns=["s.e"])["s"].to_pylist() == [{"e": {}}, {"e": None}, None, {"e": {}}]
    with rcfmt.open(path) as f:
        assert f.take([3, 1]).equals(want.take([3, 1]))
    doc = _footer_json(path)
    assert doc["required_features"] == ["nested", "empty_nested"]
    assert doc["nested"][0] == {"name": "e", "nullable": True, "kind": "struct", "column": 0}  # (FORMAT.md §3a)


# ---------------------------------------------------------------------- 2. unions without fields
def _empty_union(mode: str, n: int = 0, codes: bytes = b"") -> pa.Array:
    t = pa.union([], mode)
    buffers = [None, pa.py_buffer(codes)] + ([pa.py_buffer(bytes(4 * n))] if mode == "dense" else [])
    return pa.Array.from_buffers(t, n, buffers, children=[])


@pytest.mark.parametrize("mode", ["sparse", "dense"])
def test_unions_without_fields_round_trip_empty_and_under_empty_lists(tmp_path, mode):
    u = _empty_union(mode)
    u.validate(full=True)
    t = pa.table({"u": u, "k": pa.array([], pa.int32()),
                  "s": pa.StructArray.from_arrays([u], fields=[pa.field("u", u.type)])})
    rcfmt.write_table(t, tmp_path / "e.rcfmt")
    back = rcfmt.read_table(tmp_path / "e.rcfmt")
    assert back.schema == t.schema and back.equals(t)
    assert _footer_json(tmp_path / "e.rcfmt")["nested"][0] == {
        "name": "u", "nullable": True, "kind": "union", "column": 0, "mode": mode, "type_codes": []}
    # under lists that are NULL or empty, and map values: tables with rows
    n = 7
    valid = np.array([True, False, True, True, False, False, True])
    lists = pa.Array.from_buffers(pa.list_(u.type), n, [pa.py_buffer(np.packbits(valid, bitorder="little")),
                                                      pa.py_buffer(np.zeros(n + 1, np.int32))], children=[u])
    maps = pa.Array.from_buffers(pa.map_(pa.string(), u.type), n, [None, pa.py_buffer(np.zeros(n + 1, np.int32))],
                                 children=[pa.StructArray.from_arrays([pa.array([], pa.string()), u],
                                                                      fields=[pa.field("key", pa.string(), False),
                                                                              pa.field("value", u.type)])])
    t = pa.table({"k": np.arange(n), "l": lists, "m": maps})
    t.validate(full=True)
    with rcfmt.Writer(tmp_path / "l.rcfmt", t.schema, block_rows=3, page_rows=2) as w:
        w.write(t.slice(0, 4))
        w.write(t.slice(4))
    back = rcfmt.read_table(tmp_path / "l.rcfmt")
    assert back.schema == t.schema and back.equals(t)
    assert back["l"].to_pylist() == [[], None, [], [], None, None, []]
    assert rcfmt.read_table(tmp_path / "l.rcfmt", filter=col("k") > 4).equals(t.slice(5))


@pytest.mark.parametrize("mode", ["sparse", "dense"])
def test_a_non_empty_union_without_fields_is_invalid_data(tmp_path, mode):
    bad = _empty_union(mode, 2, b"\x00\x00")
    with pytest.raises(pa.ArrowInvalid):  # (Arrow's own validation refuses it)
        bad.validate(full=True)
    with pytest.raises(InvalidDataError, match="type code 0 is not among the union's") as info:
        rcfmt.write_table(pa.table({"k": [1, 2], "u": bad}), tmp_path / "u.rcfmt")
    assert (info.value.column, info.value.row) == ("u", 0)
    assert not (tmp_path / "u.rcfmt").exists()
    # so is a type code a union with fields does not declare (its own validation refuses it too)
    ids = np.array([0, 5], np.int8)
    t = pa.sparse_union([pa.field("i", pa.int8())])
    bad = pa.Array.from_buffers(t, 2, [None, pa.py_buffer(ids)], children=[pa.array([1, 2], pa.int8())])
    with pytest.raises(InvalidDataError, match="type code 5") as info:
        rcfmt.write_table(pa.table({"u": bad}), tmp_path / "u.rcfmt")
    assert info.value.row == 1


# ---------------------------------------------------------------------- 3. run_end_encoded nested values
RUN_ENDS = st.sampled_from([pa.int16(), pa.int32(), pa.int64()])
RUN_LEAVES = st.sampled_from([pa.int32(), pa.string(), pa.bool_(), pa.decimal128(9, 2), pa.struct([])])


def _maximal(arr: pa.Array) -> bool:
    """Whether the runs of run_end_encoded ``arr`` are maximal: no two adjacent runs hold
    equal values (as Python sees them: no float, so no NaN, in these values)."""
    values = canonical(arr.values.to_pylist())
    return all(a != b for a, b in zip(values[:-1], values[1:]))


def _union_free(t: pa.DataType) -> bool:
    if pa.types.is_union(t):
        return False
    return all(_union_free(t.field(i).type) for i in range(t.num_fields))


@settings(max_examples=S.examples(80), **SETTINGS)
@given(data=st.data())
def test_run_end_encoded_nested_values_round_trip(tmp_path_factory, data):
    values = data.draw(types_with(RUN_LEAVES, 4).filter(lambda t: nested_only(t) and _holds_values(t)))
    t = pa.run_end_encoded(data.draw(RUN_ENDS), values)
    where = data.draw(st.sampled_from(["top", "struct", "list"]))
    if where == "struct":
        t = pa.struct([("r", t), ("i", pa.int16())])
    elif where == "list":
        t = pa.list_(t)
    sizes = data.draw(st.lists(st.integers(0, 15), min_size=1, max_size=3))
    column = data.draw(chunked(t, sizes))
    n = sum(sizes)
    table = pa.table({"k": pa.array(np.arange(n, dtype=np.int64)), "r": column})
    back, path = round_trip(tmp_path_factory, table, data.draw(write_options()))
    assert back.schema == table.schema and back.equals(table)  # (run_end_encoded arrays compare their rows)
    assert plain(back["r"]) == plain(table["r"])
    if where == "top":
        for chunk in back["r"].chunks:  # re-encoded: maximal runs of the block's rows
            assert chunk.type == t and (not _union_free(values) or _maximal(chunk))
        assert plain(pa.chunked_array([pc.run_end_decode(c) for c in back["r"].chunks if len(c)], values)
                     if any(len(c) for c in back["r"].chunks) and _union_free(values) else back["r"]) == \
            plain(table["r"])
    assert "nested_run_end_encoded" in _footer_json(path)["required_features"]
    if n:
        half = data.draw(st.integers(0, n))
        got = rcfmt.read_table(path, filter=col("k") < half, columns=["r"])
        assert got.equals(table.slice(0, half).select(["r"]))  # (pyarrow filters no list of run_end_encoded)


@st.composite
def _ree_structs(draw, n: int, run_ends: pa.DataType) -> pa.Array:
    """run_end_encoded<run_ends, struct<a: int32, s: string, l: list<int8>>> of ``n`` rows."""
    t = pa.run_end_encoded(run_ends, pa.struct([("a", pa.int32()), ("s", pa.string()), ("l", pa.list_(pa.int8()))]))
    return draw(arrays_of(t, n))


def _oracle(table: pa.Table, name: str, op: str, value) -> list[int]:
    """``k`` of the rows whose ``r.<name>`` (NULL where ``r`` is) compares true, in plain Python."""
    ops = {"==": lambda a, b: a == b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b}
    out = []
    for row in table.to_pylist():
        v = None if row["r"] is None else row["r"][name]
        if v is not None and ops[op](v, value):
            out.append(row["k"])
    return out


@settings(max_examples=S.examples(60), **SETTINGS)
@given(data=st.data(), op=st.sampled_from(["==", "<", ">="]))
def test_filters_on_leaves_under_a_run_end_encoded_struct(tmp_path_factory, data, op):
    sizes = data.draw(st.lists(st.integers(0, 20), min_size=1, max_size=3))
    run_ends = data.draw(RUN_ENDS)
    chunks = [data.draw(_ree_structs(n + 1, run_ends)).slice(1) for n in sizes]
    n = sum(sizes)
    table = pa.table({"k": pa.array(np.arange(n, dtype=np.int64)), "r": pa.chunked_array(chunks, chunks[0].type),
                      "f": pa.array(data.draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), pa.int64())})
    path = tmp_path_factory.mktemp("f") / "t.rcfmt"
    rcfmt.write_table(table, path, **data.draw(write_options()))
    flat = table.select(["k", "f"])  # (pyarrow filters no run_end_encoded column: the flat ones alone)
    if op == "==":
        a, s = data.draw(st.integers(-5, 5)), data.draw(st.sampled_from(["", "a", "x"]))
        got = rcfmt.read_table(path, filter=col("r.a") == a)
        assert got["k"].to_pylist() == _oracle(table, "a", "==", a)
        got = rcfmt.read_table(path, filter=(col("r.s") == s) | (col("f") == 0))
        assert sorted(got["k"].to_pylist()) == sorted(set(_oracle(table, "s", "==", s))
                                                      | set(flat.filter(pc.equal(flat["f"], 0))["k"].to_pylist()))
    else:
        a = data.draw(st.integers(-5, 5))
        expr = col("r.a") < a if op == "<" else col("r.a") >= a
        got = rcfmt.read_table(path, filter=expr & (col("f") >= -1))
        kept = set(flat.filter(pc.greater_equal(flat["f"], -1))["k"].to_pylist())
        assert got["k"].to_pylist() == [k for k in _oracle(table, "a", op, a) if k in kept]
    assert got.schema == table.schema
    rows = plain(table["r"])  # (pyarrow takes no run_end_encoded rows)
    assert plain(got["r"]) == [rows[k] for k in got["k"].to_pylist()]
    assert rcfmt.read_table(path, filter=col("r.a").is_null())["k"].to_pylist() == [
        row["k"] for row in table.to_pylist() if row["r"] is None or row["r"]["a"] is None]


def test_run_end_encoded_nested_by_hand(tmp_path):
    lists = pa.array([[1, 2], [1, 2], None, [3]], pa.list_(pa.int8()))
    floats = pa.array([{"f": float("nan")}, {"f": float("nan")}, {"f": -0.0}, {"f": 0.0}])
    u = pa.UnionArray.from_sparse(pa.array([0, 0, 1, 1], pa.int8()), [pa.array([1, 1, 2, 2]),
                                                                      pa.array(["a", "b", "c", "c"])], ["i", "s"])
    d = pa.UnionArray.from_dense(pa.array([1, 1, 0, 0], pa.int8()), pa.array([0, 1, 0, 1], pa.int32()),
                                 [pa.array([5, 5]), pa.array(["z", "z"])], ["i", "s"])
    structs = pa.array([{"a": 1, "b": "x"}, {"a": 1, "b": "x"}, None, {"a": 2, "b": None}])
    t = pa.table({"l": pc.run_end_encode(lists, run_end_type=pa.int16()), "f": pc.run_end_encode(floats),
                  "u": pa.RunEndEncodedArray.from_arrays(pa.array([1, 2, 3, 4], pa.int64()), u),
                  "d": pa.RunEndEncodedArray.from_arrays(pa.array([2, 4], pa.int32()), d.take(pa.array([0, 2]))),
                  "s": pc.run_end_encode(structs), "k": [1, 2, 3, 4]})
    path = tmp_path / "r.rcfmt"
    rcfmt.write_table(t, path)
    back = rcfmt.read_table(path)
    assert back.schema == t.schema and back.drop_columns(["f"]).equals(t.drop_columns(["f"]))
    assert plain(back["f"]) == plain(t["f"])  # (NaN payloads kept; equals takes no NaN for equal)
    runs = {name: back[name].chunk(0).run_ends.to_pylist() for name in t.column_names[:-1]}
    assert runs == {"l": [2, 3, 4], "f": [1, 2, 3, 4], "u": [2, 4], "d": [2, 4], "s": [2, 3, 4]}
    # (Arrow's run_end_encode takes no NaN inside a nested value for equal to another, and -0.0 for 0.0;
    # union runs rcfmt finds itself: the two 1 (of child "i") and the two "c" are runs)
    assert back["u"].chunk(0).values.to_pylist() == [1, "c"]
    assert rcfmt.read_table(path, filter=col("s.a") == 1)["k"].to_pylist() == [1, 2]
    assert rcfmt.read_table(path, columns=["s.b"])["s"].type == pa.run_end_encoded(pa.int32(),
                                                                                 pa.struct([("b", pa.string())]))
    doc = _footer_json(path)
    assert doc["required_features"] == ["nested", "nested_run_end_encoded"]
    assert doc["nested"][0] == {"name": "l", "nullable": True, "kind": "list", "column": 0, "run_end_encoded": "int16",
                                "children": [{"name": "item", "nullable": True, "kind": "leaf", "column": 1}]}
    # a dictionary of nested values under it is read back as its values (as everywhere)
    rd = pa.RunEndEncodedArray.from_arrays(pa.array([2, 3], pa.int32()), pa.DictionaryArray.from_arrays(
        pa.array([0, 1], pa.int8()), pa.array([{"z": [1]}, None])))
    rcfmt.write_table(pa.table({"rd": rd}), tmp_path / "d.rcfmt")
    got = rcfmt.read_table(tmp_path / "d.rcfmt")["rd"]
    assert got.type == pa.run_end_encoded(pa.int32(), pa.struct([("z", pa.list_(pa.int64()))]))
    assert got.to_pylist() == rd.to_pylist()


def test_format_md_example_of_a_run_end_encoded_list(tmp_path):
    r = pc.run_end_encode(pa.array([[1, 2], [1, 2], None], pa.list_(pa.int8())))
    rcfmt.write_table(pa.table({"r": r}), tmp_path / "r.rcfmt", encoding="plain", compression="none")
    with rcfmt.open(tmp_path / "r.rcfmt") as f:
        stored = [f._read_chunk(0, c, slots).to_pylist() for c, slots in ((0, 3), (1, 4))]
    assert stored == [[2, 2, None], [1, 2, 1, 2]]


def test_extensions_around_run_end_encoded_nested_values(tmp_path):
    s = pa.array([{"a": 1}, {"a": 1}, None, {"a": 2}, {"a": 2}])
    runs = pc.run_end_encode(s)
    inner = pa.RunEndEncodedArray.from_arrays(pa.array([2, 3, 5], pa.int32()), cat(s).take(pa.array([0, 2, 3])))
    outer = cat(runs, "over")
    dictionary = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int8()), pa.array([{"a": 1}, {"a": 2}]))
    declared = cat(pa.RunEndEncodedArray.from_arrays(pa.array([2, 4, 5], pa.int32()), dictionary), "declared")
    t = pa.table({"inner": inner, "outer": outer, "declared": declared, "k": np.arange(5)})
    path = tmp_path / "e.rcfmt"
    rcfmt.write_table(t, path, block_rows=4)
    back = rcfmt.read_table(path)
    assert back.schema == t.schema
    assert back.select(["inner", "outer"]).equals(t.select(["inner", "outer"]))
    assert plain(back["declared"]) == plain(t["declared"])
    for chunk in back["declared"].chunks:  # the declared storage: dictionaries in order of first use
        values = chunk.storage.values
        assert values.type == dictionary.type and values.indices.to_pylist() == list(range(len(values.dictionary)))
    nodes = {n["name"]: n for n in _footer_json(path)["nested"]}
    assert nodes["inner"]["extension_name"] == "rcfmt.test.cat" and nodes["inner"]["run_end_encoded"] == "int32"
    assert nodes["outer"]["run_end_encoded_extension"] == {"extension_name": "rcfmt.test.cat",
                                                           "extension_metadata": base64.b64encode(b"over").decode()}
    assert nodes["declared"]["run_end_encoded_extension"]["arrow_storage"] == {
        "type": "run_end_encoded", "run_ends": "int32",
        "values": {"type": "dictionary", "index": "int8", "values": {"type": "struct", "fields": [
            {"name": "a", "nullable": True, "type": "int64"}]}}}
    assert "outer.a" not in rcfmt.open(path).filter_schema.names  # (an extension is read whole)
    got = rcfmt.read_table(path, filter=col("k") >= 3)
    assert got.drop_columns(["declared"]).equals(back.slice(3).drop_columns(["declared"]))
    assert plain(got["declared"]) == plain(t["declared"])[3:]  # (its dictionaries: of the rows read)


# ---------------------------------------------------------------------- 4. extensions over dictionaries, views
STORAGES = [
    pa.dictionary(pa.int8(), pa.string()),
    pa.dictionary(pa.int16(), pa.int64(), ordered=True),
    pa.dictionary(pa.int8(), pa.decimal64(10, 2)),
    pa.string_view(),
    pa.binary_view(),
    pa.run_end_encoded(pa.int32(), pa.dictionary(pa.int8(), pa.string())),
    pa.struct([("a", pa.dictionary(pa.int8(), pa.string())), ("v", pa.string_view()), ("i", pa.int32())]),
    pa.dictionary(pa.int8(), pa.struct([("a", pa.int32()), ("l", pa.list_(pa.string()))])),
    pa.list_view(pa.int8()),
    pa.large_list(pa.dictionary(pa.int32(), pa.binary())),
    pa.map_(pa.string(), pa.dictionary(pa.int8(), pa.string())),
    pa.list_(pa.struct([("d", pa.dictionary(pa.uint8(), pa.int32()))]), 2),
]


def _first_use_dictionaries(arr) -> bool:
    """Whether every dictionary array in ``arr`` (read back: any type) holds distinct
    values in order of first use, each used."""
    if isinstance(arr, pa.ChunkedArray):
        return all(_first_use_dictionaries(c) for c in arr.chunks)
    t = arr.type
    if isinstance(t, pa.BaseExtensionType):
        return _first_use_dictionaries(arr.storage)
    if pa.types.is_dictionary(t):
        used = [i for i in arr.indices.to_pylist() if i is not None]
        firsts = list(dict.fromkeys(used))
        dictionary = canonical(arr.dictionary.to_pylist())
        return firsts == list(range(len(arr.dictionary))) and \
            len({json.dumps(v, default=repr) for v in dictionary}) == len(dictionary)
    if pa.types.is_run_end_encoded(t):
        return _first_use_dictionaries(arr.values)
    if pa.types.is_struct(t):
        return all(_first_use_dictionaries(arr.field(i)) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) \
            or pa.types.is_list_view(t):
        return _first_use_dictionaries(arr.values)
    if pa.types.is_map(t):
        return _first_use_dictionaries(arr.items)
    return True


@st.composite
def _placed(draw, storage: pa.DataType, n: int, where: str):
    """``n`` values of ``Cat(storage)``, placed ``where``: at the top or in a list or a struct."""
    if where == "top":
        return cat(draw(arrays_of(storage, n)))
    if where == "struct":
        inner = cat(draw(arrays_of(storage, n)))
        bits, _ = _bits(draw, n, True)
        return pa.Array.from_buffers(pa.struct([("o", pa.int8()), ("e", inner.type)]), n, [bits],
                                     children=[pa.array(np.arange(n) % 100, pa.int8()), inner])
    lengths = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    inner = cat(draw(arrays_of(storage, int(offsets[-1]))))
    bits, _ = _bits(draw, n, True)
    return pa.Array.from_buffers(pa.list_(inner.type), n, [bits, pa.py_buffer(offsets)], children=[inner])


@settings(max_examples=S.examples(80), **SETTINGS)
@given(data=st.data())
def test_extensions_over_dictionaries_and_views_round_trip(tmp_path_factory, data):
    storage = data.draw(st.sampled_from(STORAGES))
    where = data.draw(st.sampled_from(["top", "top", "struct", "list"]))
    sizes = data.draw(st.lists(st.integers(0, 12), min_size=1, max_size=3))
    chunks = [data.draw(_placed(storage, n + 1, where)).slice(1) for n in sizes]  # (sliced parents)
    n = sum(sizes)
    table = pa.table({"k": pa.array(np.arange(n, dtype=np.int64)), "e": pa.chunked_array(chunks, chunks[0].type)})
    options = data.draw(write_options())
    back, path = round_trip(tmp_path_factory, table, options)
    assert back.schema == table.schema
    assert plain(back["e"]) == plain(table["e"])
    assert _first_use_dictionaries(back["e"])
    if not any(pa.types.is_dictionary(t) for t in _types_in(storage)):  # (views: compared as values)
        assert back.equals(table)
    elif where == "top" and storage == pa.dictionary(pa.int8(), pa.string()):
        # block by block, the rows' distinct values in order of first use: Arrow's dictionary_encode
        rows = pa.concat_arrays([c.storage.dictionary_decode() for c in table["e"].chunks])
        want = [cat(rows.slice(b.start, b.stop - b.start).dictionary_encode().cast(storage))
                for b in _blocks(n, options["block_rows"])]
        assert pa.chunked_array(back["e"].chunks, back["e"].type).equals(pa.chunked_array(want, table["e"].type))
    assert "extension_storage" in _footer_json(path)["required_features"]
    if n:
        half = data.draw(st.integers(0, n))
        got = rcfmt.read_table(path, filter=col("k") >= half)
        assert got.schema == table.schema and plain(got["e"]) == plain(table["e"])[half:]


def _types_in(t: pa.DataType) -> list:
    out = [t]
    if isinstance(t, pa.BaseExtensionType):
        return out + _types_in(t.storage_type)
    if pa.types.is_dictionary(t) or pa.types.is_run_end_encoded(t):
        return out + _types_in(t.value_type)
    for i in range(t.num_fields):
        out += _types_in(t.field(i).type)
    return out


def _blocks(n: int, block_rows: int) -> list[range]:
    return [range(a, min(a + block_rows, n)) for a in range(0, n, block_rows)]


def test_extension_storage_json_and_format_md_examples(tmp_path):
    flat = cat(pa.array(["b", "b"]).dictionary_encode().cast(pa.dictionary(pa.int8(), pa.string())), "")
    rcfmt.write_table(pa.table({"c": flat}), tmp_path / "c.rcfmt", encoding="plain", compression="none")
    doc = _footer_json(tmp_path / "c.rcfmt")
    assert doc["required_features"] == ["extension_storage"]
    entry = {k: v for k, v in doc["schema"][0].items() if k not in ("name", "nullable", "stat_width")}
    assert entry == {"type": "extension", "extension_name": "rcfmt.test.cat", "extension_metadata": "",
                     "storage": {"type": "string"},
                     "arrow_storage": {"type": "dictionary", "index": "int8", "values": {"type": "string"}}}
    back = rcfmt.read_table(tmp_path / "c.rcfmt")["c"].chunk(0)
    assert back.storage.indices.to_pylist() == [0, 0] and back.storage.dictionary.to_pylist() == ["b"]
    st_ = pa.struct([("a", pa.dictionary(pa.int8(), pa.string()))])
    nested = cat(pa.array([{"a": "p"}, None], st_), "")
    rcfmt.write_table(pa.table({"b": nested}), tmp_path / "b.rcfmt")
    doc = _footer_json(tmp_path / "b.rcfmt")
    assert doc["required_features"] == ["nested", "nested_extensions", "extension_storage"]
    assert doc["nested"][0] == {
        "name": "b", "nullable": True, "kind": "struct", "column": 0, "extension_name": "rcfmt.test.cat",
        "extension_metadata": "", "arrow_storage": {"type": "struct", "fields": [
            {"name": "a", "nullable": True, "type": "dictionary", "index": "int8", "values": {"type": "string"}}]},
        "children": [{"name": "a", "nullable": True, "kind": "leaf", "column": 1}]}
    assert rcfmt.read_table(tmp_path / "b.rcfmt").equals(pa.table({"b": nested}))


def test_another_interpreter_reads_the_decoded_storage_or_the_registered_extension(tmp_path):
    flat = cat(pa.array(["x", None, "y", "x"]).dictionary_encode())
    views = cat(pa.array(["p", "q", None, "r"], pa.string_view()))
    nested = cat(pa.array([{"a": "x"}, None, {"a": None}, {"a": "y"}],
                          pa.struct([("a", pa.dictionary(pa.int8(), pa.string()))])))
    table = pa.table({"f": flat, "v": views, "n": nested})
    path = tmp_path / "x.rcfmt"
    rcfmt.write_table(table, path, block_rows=3)
    plain_read = textwrap.dedent(f"""
        import json, rcfmt
        t = rcfmt.read_table({str(path)!r})
        print(json.dumps([str(f.type) for f in t.schema]))
        print(json.dumps(t.to_pylist()))
    """)
    out = subprocess.run([sys.executable, "-c", plain_read], capture_output=True, text=True, check=True).stdout
    types, rows = (json.loads(line) for line in out.strip().split("\n"))
    assert types == ["string", "string", "struct<a: string>"]  # (rcfmt.test.cat is not registered there)
    assert rows == table.to_pylist()
    registered = textwrap.dedent(f"""
        import json, pyarrow as pa, rcfmt
        class Cat(pa.ExtensionType):
            def __init__(self, storage, tag="cat"):
                self.tag = tag
                super().__init__(storage, "rcfmt.test.cat")
            def __arrow_ext_serialize__(self):
                return self.tag.encode()
            @classmethod
            def __arrow_ext_deserialize__(cls, storage_type, serialized):
                return cls(storage_type, serialized.decode())
        pa.register_extension_type(Cat(pa.int8()))
        t = rcfmt.read_table({str(path)!r})
        print(json.dumps([str(f.type.storage_type) for f in t.schema]))
        print(json.dumps([c.storage.to_pylist() for c in t.columns for c in c.chunks]))
    """)
    out = subprocess.run([sys.executable, "-c", registered], capture_output=True, text=True, check=True).stdout
    types, chunks = (json.loads(line) for line in out.strip().split("\n"))
    assert types == [str(f.type.storage_type) for f in table.schema]
    assert chunks == [["x", None, "y"], ["x"], ["p", "q", None], ["r"], [{"a": "x"}, None, {"a": None}], [{"a": "y"}]]


def test_a_block_beyond_the_index_type_is_invalid_data(tmp_path):
    """Two chunks of 100 distinct values each under int8 indices: a block of both could
    not be encoded again (Arrow cannot concatenate them either); smaller blocks can."""
    t = pa.dictionary(pa.int8(), pa.string())
    chunks = [pa.array([f"{c}{i}" for i in range(100)]).dictionary_encode().cast(t) for c in "ab"]
    for i, storage in enumerate((t, pa.struct([("d", t)]), pa.list_(t))):
        parts = chunks if storage == t else [pa.StructArray.from_arrays([c], names=["d"]) for c in chunks] \
            if i == 1 else [pa.ListArray.from_arrays(pa.array([0, 50, 100], pa.int32()), c) for c in chunks]
        table = pa.table({"e": pa.chunked_array([cat(p) for p in parts], Cat(storage))})
        path = tmp_path / f"{i}.rcfmt"
        with pytest.raises(InvalidDataError, match="write smaller blocks") as info:
            rcfmt.write_table(table, path)
        assert info.value.column == "e"
        assert not path.exists()
        rcfmt.write_table(table, path, block_rows=len(parts[0]))
        assert plain(rcfmt.read_table(path)["e"]) == plain(table["e"])


def test_blocks_fit_int16_run_ends(tmp_path):
    """Two chunks of 30,000 rows under int16 run ends (each valid Arrow): a block of
    both could not be encoded again, so blocks of such a column (or struct field) hold
    at most 32,767 rows, at any block_rows; below a list, where a block's rows do not
    bound its elements, a block of more is invalid data (Arrow's raw ArrowInvalid
    escaped), and smaller blocks can be written."""
    def runs(value, n=30_000):
        return pa.RunEndEncodedArray.from_arrays(pa.array([n], pa.int16()), pa.array([value], pa.int64()))

    flat = pa.chunked_array([runs(7), runs(8)])
    in_struct = pa.chunked_array([pa.StructArray.from_arrays([runs(v)], names=["r"]) for v in (7, 8)])
    for name, column in (("flat", flat), ("struct", in_struct)):
        path = tmp_path / f"{name}.rcfmt"
        rcfmt.write_table(pa.table({"x": column, "i": pa.array(np.arange(60_000))}), path, block_rows=1 << 20)
        with rcfmt.open(path) as f:
            assert [int(b["row_count"]) for b in f.footer.blocks] == [32_767, 27_233]
            got = f.read()
        got.validate(full=True)
        assert plain(got["x"]) == plain(column)
    in_list = pa.chunked_array([pa.ListArray.from_arrays(pa.array([0, 30_000], pa.int32()), runs(v)) for v in (7, 8)])
    path = tmp_path / "list.rcfmt"
    with pytest.raises(InvalidDataError, match="write smaller blocks"):
        rcfmt.write_table(pa.table({"l": in_list}), path)
    assert not path.exists()
    rcfmt.write_table(pa.table({"l": in_list}), path, block_rows=1)
    assert plain(rcfmt.read_table(path)["l"]) == plain(in_list)


def test_indices_outside_an_extensions_dictionary_are_invalid_data(tmp_path):
    bad = pa.DictionaryArray.from_arrays(pa.array([0, 7], pa.int8()), pa.array(["a"]), safe=False)
    struct = pa.Array.from_buffers(pa.struct([("d", bad.type)]), 2, [None], children=[bad])
    runs = pa.Array.from_buffers(pa.run_end_encoded(pa.int32(), struct.type), 2, [None],
                                 children=[pa.array([1, 2], pa.int32()), struct])
    for arr in (cat(struct), cat(runs), cat(bad)):
        with pytest.raises(InvalidDataError, match="dictionary") as info:
            rcfmt.write_table(pa.table({"e": arr}), tmp_path / "t.rcfmt")
        assert info.value.column == "e"
    assert not list(tmp_path.iterdir())


def test_bad_run_ends_are_invalid_data(tmp_path):
    values = pa.array([[1], [2]], pa.list_(pa.int8()))
    bad = pa.Array.from_buffers(pa.run_end_encoded(pa.int32(), values.type), 2, [None],  # (not increasing)
                                children=[pa.array([3, 2], pa.int32()), values])
    with pytest.raises(InvalidDataError, match="run ends") as info:
        rcfmt.write_table(pa.table({"r": bad}), tmp_path / "t.rcfmt")
    assert info.value.column == "r"
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------------- datasets, Writer
def _shapes_table(n: int = 12) -> pa.Table:
    rng = np.random.default_rng(5)
    k = np.arange(n, dtype=np.int64)
    e = pa.array([{} if i % 3 else None for i in range(n)], pa.struct([]))
    structs = pa.array([{"a": int(v), "b": [str(v)] * int(v % 3)} if v % 4 else None
                        for v in rng.integers(0, 9, n)])
    values = pa.array(["x", "y", None, "z"])
    codes = pa.array(rng.integers(0, 4, n), pa.int8())
    return pa.table({"k": k, "e": e, "r": pc.run_end_encode(structs),
                     "c": cat(pa.DictionaryArray.from_arrays(codes, values)),
                     "v": cat(pa.array([f"v{i % 5}" for i in range(n)], pa.string_view()))})


def test_datasets_write_append_read_and_filter(tmp_path):
    t = _shapes_table()
    root = tmp_path / "ds"
    rcfmt.write_dataset(t, root, target_file_rows=5)
    rcfmt.write_dataset(t.slice(2, 4), root, mode="append")
    ds = rcfmt.dataset(root)
    assert ds.schema == t.schema
    everything = pa.concat_tables([t, t.slice(2, 4)])
    got = ds.to_table()
    key = lambda r: (r["k"], json.dumps(canonical(r), default=repr))  # noqa: E731
    assert sorted(got.to_pylist(), key=key) == sorted(everything.to_pylist(), key=key)
    got = ds.to_table(filter=(col("r.a") >= 4) & (col("k") < 10))
    want = [r for r in everything.to_pylist() if r["r"] is not None and r["r"]["a"] >= 4 and r["k"] < 10]
    assert sorted(got.to_pylist(), key=key) == sorted(want, key=key)
    assert got.schema == t.schema


def test_the_streaming_writer(tmp_path):
    t = _shapes_table(20)
    with rcfmt.Writer(tmp_path / "w.rcfmt", t.schema, block_rows=6, page_rows=2) as w:
        for part in (t.slice(0, 7), t.slice(7, 1), t.slice(8)):
            w.write(part)
        w.flush_block()
        w.write(t.slice(3, 5))
    back = rcfmt.read_table(tmp_path / "w.rcfmt")
    want = pa.concat_tables([t, t.slice(3, 5)])
    assert back.schema == want.schema
    assert back.select(["k", "e", "r", "v"]).equals(want.select(["k", "e", "r", "v"]))
    assert plain(back["c"]) == plain(want["c"])
    with rcfmt.open(tmp_path / "w.rcfmt") as f:
        batches = list(f.iter_batches(batch_size=4, filter=col("r.a") == 3))
        assert all(b.schema == want.schema for b in batches)
        assert sum((b.column(0).to_pylist() for b in batches), []) == [
            r["k"] for r in want.to_pylist() if r["r"] is not None and r["r"]["a"] == 3]


# ---------------------------------------------------------------------- older readers, forged footers
def test_older_readers_refuse_by_feature_name(tmp_path, monkeypatch):
    from rcfmt.format import footer

    t = _shapes_table()
    for name in t.column_names[1:]:
        rcfmt.write_table(t.select([name]), tmp_path / f"{name}.rcfmt")
    features = {"e": "empty_nested", "r": "nested_run_end_encoded", "c": "extension_storage", "v": "extension_storage"}
    for name, feature in features.items():
        assert feature in _footer_json(tmp_path / f"{name}.rcfmt")["required_features"]
    monkeypatch.setattr(footer, "KNOWN_FEATURES", frozenset({"nested", "duplicate_names", "nested_extensions"}))
    for name, feature in features.items():
        with pytest.raises(UnsupportedError, match=feature):
            rcfmt.read_table(tmp_path / f"{name}.rcfmt")


def test_files_without_these_shapes_list_none_of_their_features(tmp_path):
    t = pa.table({"s": pa.array([{"a": 1}]), "r": pc.run_end_encode(pa.array([1])),
                  "c": cat(pa.array([{"a": [1]}])), "d": pa.array(["x"]).dictionary_encode(),
                  "u": pa.UnionArray.from_sparse(pa.array([0], pa.int8()), [pa.array([1])])})
    rcfmt.write_table(t, tmp_path / "t.rcfmt")
    doc = _footer_json(tmp_path / "t.rcfmt")
    assert doc["required_features"] == ["nested", "nested_extensions"]
    text = json.dumps(doc)
    assert "arrow_storage" not in text and '"run_end_encoded":' not in text.replace(" ", "")


@pytest.mark.parametrize("column, change, match", [
    ("e", lambda d: d.update(required_features=["nested"]), "empty_nested"),
    ("r", lambda d: d.update(required_features=["nested"]), "nested_run_end_encoded"),
    ("c", lambda d: d.update(required_features=["nested", "nested_extensions"]), "extension_storage"),
    ("v", lambda d: d.update(required_features=[]), "extension_storage"),
    ("r", lambda d: d["nested"][0].update(run_end_encoded="int8"), "run_end_encoded"),
    ("r", lambda d: d["nested"][0]["children"][0].update(run_end_encoded="int32"), "run_end_encoded keys"),
    ("r", lambda d: d["nested"][0].update(arrow_storage={"type": "string"}), "arrow_storage without an extension"),
    ("c", lambda d: d["nested"][0].update(arrow_storage={"type": "string"}), "not stored as"),
    ("c", lambda d: d["nested"][0].update(arrow_storage={"type": "struct", "fields": [
        {"name": "a", "nullable": True, "type": "int64"}]}), "not stored as"),
    ("v", lambda d: d["schema"][0].update(arrow_storage={"type": "binary_view"}), "not stored as"),
    ("v", lambda d: d["schema"][0].update(arrow_storage={"type": "dictionary", "index": "int9",
                                                         "values": {"type": "string"}}), "malformed"),
])
def test_forged_footers_are_corrupt_files(tmp_path, column, change, match):
    t = _shapes_table().select([column])
    if column == "c":  # (a nested storage: its node carries the keys)
        t = pa.table({"c": cat(pa.array([{"a": "x"}], pa.struct([("a", pa.dictionary(pa.int8(), pa.string()))])))})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(t, path, metadata={"pad": "x" * 400})  # (room in the footer for what is forged)
    _rewrite_footer_json(path, lambda d: (change(d), d.update(metadata=[])))
    with pytest.raises(CorruptFileError, match=match):
        rcfmt.read_table(path)


def test_what_is_still_refused_by_name(tmp_path):
    """What no Arrow format carries: an extension of an extension (pyarrow cannot read
    one back)."""
    with pytest.raises(SchemaError, match="'x'.*an extension of"):
        rcfmt.Writer(tmp_path / "t.rcfmt", pa.schema([("x", Cat(Cat(pa.list_(pa.int8()))))]))
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("shape", ["struct", "list", "map"])
def test_runs_inside_run_end_encoded_nested_values_are_stored_as_their_values(tmp_path, shape):
    """run_end_encoded<o, struct<r: run_end_encoded<i, T>>> (or a list or map value of
    runs): the inner runs are stored as their values and read back so (docs/FORMAT.md
    §3a), the rows unchanged; filters on the leaf see its values."""
    inner = pc.run_end_encode(pa.array([1, 1, 2, None, 2, 5], pa.int8()))
    if shape == "struct":
        values = pa.StructArray.from_arrays([inner, pa.array(list("abcdef"))], names=["r", "s"])
    elif shape == "list":
        values = pa.ListArray.from_arrays(pa.array([0, 2, 2, 5, 6], pa.int32()), inner,
                                      mask=pa.array([False, True, False, False]))
    else:
        values = pa.MapArray.from_arrays(pa.array([0, 1, 4, 6], pa.int32()), pa.array(list("uvwxyz")), inner)
    runs = pa.RunEndEncodedArray.from_arrays(pa.array([2, 3, 7], pa.int32()), values.slice(len(values) - 3))
    runs.validate(full=True)
    table = pa.table({"x": runs, "k": pa.array(np.arange(len(runs)))})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=3)
    back = rcfmt.read_table(path)
    back.validate(full=True)
    assert pa.types.is_run_end_encoded(back.schema.field("x").type)
    assert "run_end_encoded" not in str(back.schema.field("x").type.value_type)
    assert plain(back["x"]) == plain(table["x"])
    if shape == "struct":
        want = [k for k, v in enumerate(table["x"].to_pylist()) if v["r"] == 2]
        assert rcfmt.read_table(path, filter=col("x.r") == 2)["k"].to_pylist() == want


@settings(max_examples=S.examples(60), **SETTINGS)
@given(data=st.data())
def test_runs_of_runs_are_stored_as_one_level_of_runs(tmp_path_factory, data):
    """run_end_encoded<o, run_end_encoded<i, T>> (flat or nested T): stored decoded and
    read back as run_end_encoded<o, T> with the same rows (docs/FORMAT.md §3.1)."""
    nested = data.draw(st.booleans())
    m = data.draw(st.integers(1, 12))
    vals = data.draw(st.lists(st.none() | st.integers(-3, 3), min_size=m, max_size=m))
    leaf = pa.array([None if v is None else [v] * (abs(v) % 3) for v in vals], pa.list_(pa.int8())) if nested \
        else pa.array(vals, pa.int8())
    inner_ends = np.cumsum(data.draw(st.lists(st.integers(1, 3), min_size=m, max_size=m)))
    inner = pa.RunEndEncodedArray.from_arrays(pa.array(inner_ends, pa.int16()), leaf)
    k = data.draw(st.integers(1, int(inner_ends[-1])))
    outer_ends = np.cumsum(data.draw(st.lists(st.integers(1, 4), min_size=k, max_size=k)))
    outer = pa.RunEndEncodedArray.from_arrays(pa.array(outer_ends, pa.int32()), inner.slice(0, k))
    outer.validate(full=True)
    cut = data.draw(st.integers(0, len(outer)))
    table = pa.table({"r": pa.chunked_array([outer.slice(0, cut), outer.slice(cut)], outer.type),
                      "k": pa.array(np.arange(len(outer)))})
    back, _ = round_trip(tmp_path_factory, table, data.draw(write_options()))
    assert back.schema.field("r").type == pa.run_end_encoded(pa.int32(), leaf.type)
    assert plain(back["r"]) == plain(table["r"])


def test_cat_prints_run_end_encoded_columns_as_their_values(tmp_path):
    """``rcfmt cat`` (CSV) of run_end_encoded columns (of strings with NULLs, of ints,
    of structs) prints what it prints for the same values unencoded; Arrow's CSV writer
    refuses runs (a raw ArrowInvalid traceback before)."""

    plain_values = {"s": pa.array(["a", "a", None, None, "b"]), "i": pa.array([1, 1, 1, 2, 2], pa.int64()),
                    "st": pa.array([{"x": 1}, {"x": 1}, None, {"x": 2}, {"x": 2}])}
    runs = pa.table({k: pc.run_end_encode(v) for k, v in plain_values.items()})
    outputs = []
    for name, table in (("runs", runs), ("plain", pa.table(plain_values))):
        path = tmp_path / f"{name}.rcfmt"
        rcfmt.write_table(table, path)
        proc = subprocess.run([sys.executable, "-m", "rcfmt.cli", "cat", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].splitlines()[:2] == ['"s","i","st"', '"a",1,"{""x"": 1}"']
