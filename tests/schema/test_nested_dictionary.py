"""Dictionaries of nested types (issue 61; docs/FORMAT.md §3a): a dictionary whose values
are a struct, list, large_list, fixed_size_list, map or union -- at any depth, with
dictionaries inside its values too -- is stored as its decoded values and read back as
them, like dictionaries of flat values. Round trips of random types and values (NULL
indices, NULL entries, unused and repeated entries, sliced arrays, several chunks each
with its own dictionaries, small blocks and pages) are compared to the input decoded by
pyarrow alone (``Array.dictionary_decode``), and filters on the flat columns of such
fields to pyarrow.compute on the decoded table."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
import strategies as S
from rcfmt import col
from rcfmt.errors import InvalidDataError
from schema.test_nested import _leaf_under_structs, _mask, canonical, nested_arrays, nested_types

#: leaves whose values all convert to Python (for comparing lists of values)
LEAVES = st.sampled_from([pa.int64(), pa.int32(), pa.uint8(), pa.string(), pa.large_string(), pa.float64(),
                          pa.bool_(), pa.decimal128(12, 2), pa.binary()])
INDEX_TYPES = st.sampled_from([pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32()])


def _nested(t: pa.DataType) -> bool:
    return pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_large_list(t) \
        or pa.types.is_fixed_size_list(t) or pa.types.is_map(t) or pa.types.is_union(t)


# ---------------------------------------------------------------------- types and arrays
@st.composite
def encoded_types(draw, t: pa.DataType, top: bool = True) -> pa.DataType:
    """``t`` with dictionaries around some of its nodes (nested ones and leaves; not map
    keys), at least one of them around a nested node when ``top``."""
    if pa.types.is_struct(t):
        inner = pa.struct([f.with_type(draw(encoded_types(f.type, False))) for f in t])
    elif pa.types.is_map(t):
        inner = pa.map_(t.key_field, t.item_field.with_type(draw(encoded_types(t.item_type, False))))
    elif pa.types.is_fixed_size_list(t):
        inner = pa.list_(t.value_field.with_type(draw(encoded_types(t.value_type, False))), t.list_size)
    elif pa.types.is_large_list(t):
        inner = pa.large_list(t.value_field.with_type(draw(encoded_types(t.value_type, False))))
    elif pa.types.is_list(t):
        inner = pa.list_(t.value_field.with_type(draw(encoded_types(t.value_type, False))))
    else:
        inner = t
    if draw(st.integers(0, 2)) == 0 or (top and not _has_nested_dictionary(inner)):
        return pa.dictionary(draw(INDEX_TYPES), inner)
    return inner


def _has_nested_dictionary(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return _nested(t.value_type) or _has_nested_dictionary(t.value_type)
    if pa.types.is_map(t):
        return _has_nested_dictionary(t.item_type)
    return any(_has_nested_dictionary(t.field(i).type) for i in range(t.num_fields))


@st.composite
def encoded_arrays(draw, t: pa.DataType, n: int, nullable: bool = True) -> pa.Array:
    """``n`` values of ``t`` (an :func:`encoded_types` type): NULLs at every level where
    allowed; dictionaries of 0 to 6 entries (NULL ones too), indices NULL or picking
    entries any number of times (some never); sometimes sliced."""
    skip = draw(st.integers(0, 2))
    arr = draw(_encoded(t, n + skip, nullable))
    return arr.slice(skip, n)


def _encoded(t: pa.DataType, n: int, nullable: bool):
    """Arrays of ``t`` with dictionaries (of any value type) wherever ``t`` has them."""
    return nested_arrays(t, n, nullable, hook=_dictionaries)


def _dictionaries(t: pa.DataType, n: int, nullable: bool):
    return _dictionary_array(t, n, nullable) if pa.types.is_dictionary(t) else None


@st.composite
def _dictionary_array(draw, t: pa.DictionaryType, n: int, nullable: bool) -> pa.Array:
    m = draw(st.integers(1 if n else 0, 6))
    dictionary = draw(_encoded(t.value_type, m, nullable))
    codes = draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n)) if m else [0] * n
    mask = _mask(draw, n, nullable)
    if not m and n:
        mask = pa.array([True] * n)
    indices = pa.array(codes, t.index_type, mask=None if mask is None else mask.to_numpy(zero_copy_only=False))
    return pa.DictionaryArray.from_arrays(indices, dictionary)


# ---------------------------------------------------------------------- the oracle (pyarrow only)
def decoded_type(t: pa.DataType) -> pa.DataType:
    """The type a dictionary-encoded type is read back as: every dictionary its values."""
    if pa.types.is_dictionary(t):
        return decoded_type(t.value_type)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(decoded_type(f.type)) for f in t])
    if pa.types.is_union(t):
        return pa.union([f.with_type(decoded_type(f.type)) for f in t], t.mode, list(t.type_codes))
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(decoded_type(t.key_type)),
                       t.item_field.with_type(decoded_type(t.item_type)), keys_sorted=t.keys_sorted)
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(decoded_type(t.value_type)), t.list_size)
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(decoded_type(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(decoded_type(t.value_type)))
    return t


def decoded(arr) -> pa.Array:
    """``arr`` with every dictionary in it decoded, by pyarrow's own calls."""
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([decoded(c) for c in arr.chunks], decoded_type(arr.type))
    t = arr.type
    if pa.types.is_dictionary(t):
        return decoded(arr.dictionary_decode())
    if not _nested(t):
        return arr
    mask = arr.is_null() if arr.null_count else None
    out_t = decoded_type(t)
    if pa.types.is_struct(t):
        return pa.StructArray.from_arrays([decoded(arr.field(i)) for i in range(t.num_fields)], fields=list(out_t),
                                          mask=mask)
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        return pa.FixedSizeListArray.from_arrays(decoded(arr.values.slice(arr.offset * size, len(arr) * size)),
                                                 type=out_t, mask=mask)
    offsets = pa.array(arr.offsets.to_pylist(), arr.offsets.type)  # (from_arrays refuses sliced ones with a mask)
    if pa.types.is_map(t):
        return pa.MapArray.from_arrays(offsets, decoded(arr.keys), decoded(arr.items), type=out_t, mask=mask)
    cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
    return cls.from_arrays(offsets, decoded(arr.values), type=out_t, mask=mask)


def decoded_table(t: pa.Table) -> pa.Table:
    schema = pa.schema([f.with_type(decoded_type(f.type)) for f in t.schema])
    return pa.Table.from_arrays([decoded(c) for c in t.columns], schema=schema)


def assert_decoded(got: pa.Table, given: pa.Table) -> None:
    want = decoded_table(given)
    want.validate(full=True)
    got.validate(full=True)
    assert got.schema == want.schema, (got.schema, want.schema)
    for name in given.column_names:
        assert canonical(got[name].to_pylist()) == canonical(want[name].to_pylist()), name
        assert canonical(got[name].to_pylist()) == canonical(given[name].to_pylist()), name


def _struct_leaf_paths(t: pa.DataType, prefix: tuple) -> list[tuple]:
    """Paths to leaves reached through structs only (dictionaries decoded): the flat
    columns a filter names."""
    t = decoded_type(t)
    if pa.types.is_struct(t):
        return [p for f in t for p in _struct_leaf_paths(f.type, prefix + (f.name,))]
    return [] if _nested(t) else [prefix]


def _filter_case(data, table: pa.Table):
    """A random filter on a flat column of ``table``'s decoded form (``None`` when none
    is filterable) and the rows pyarrow.compute keeps."""
    paths = [p for name in table.column_names[1:] for p in _struct_leaf_paths(table.schema.field(name).type, (name,))
             if len(p) > 1]
    if not paths:
        return None
    path = data.draw(st.sampled_from(paths))
    plain = decoded_table(table)
    values = _leaf_under_structs(plain, list(path))
    present = values.drop_null()
    if pa.types.is_floating(values.type):  # (NaN is no comparison literal)
        present = present.filter(pc.invert(pc.is_nan(present)))
    c = col(".".join(path))
    if not len(present) or data.draw(st.booleans()):
        op = data.draw(st.sampled_from(["is_null", "is_valid"]))
        expr, keep = (c.is_null(), pc.is_null(values)) if op == "is_null" else (c.is_valid(), pc.is_valid(values))
    else:
        literal = present[data.draw(st.integers(0, len(present) - 1))]
        op = data.draw(st.sampled_from(["==", "!=", "<", ">=", "isin"]))
        lit = literal.as_py()
        expr, keep = {"==": (c == lit, lambda: pc.equal(values, literal)),
                      "!=": (c != lit, lambda: pc.not_equal(values, literal)),
                      "<": (c < lit, lambda: pc.less(values, literal)),
                      ">=": (c >= lit, lambda: pc.greater_equal(values, literal)),
                      "isin": (c.isin([lit]), lambda: pc.is_in(values, pa.array([lit], values.type)))}[op]
        keep = keep()
    return expr, plain.filter(pc.fill_null(keep, False))


@st.composite
def dictionary_tables(draw, rows=st.integers(0, 30), max_fields: int = 2) -> pa.Table:
    """A table of an ``id`` column and 1 to ``max_fields`` dictionary-encoded nested
    fields, in 1 to 3 chunks, each with its own dictionaries."""
    types = [draw(encoded_types(draw(nested_types(LEAVES, max_leaves=4).filter(_nested))))
             for _ in range(draw(st.integers(1, max_fields)))]
    nullable = [draw(st.booleans()) for _ in types]
    schema = pa.schema([pa.field("id", pa.int64(), False)] + [pa.field(f"f{i}", t, nl)
                                                                for i, (t, nl) in enumerate(zip(types, nullable))])
    sizes = draw(st.lists(rows, min_size=1, max_size=3))
    chunks, start = [], 0
    for n in sizes:
        arrays = [pa.array(np.arange(start, start + n, dtype=np.int64))]
        arrays += [draw(encoded_arrays(f.type, n, f.nullable)) for f in list(schema)[1:]]
        chunks.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
        start += n
    return pa.Table.from_batches(chunks, schema=schema)


def _options(draw) -> dict:
    return {"block_rows": draw(st.sampled_from([3, 7, 64])), "page_rows": draw(st.sampled_from([2, 5, 1000])),
            "compression": draw(st.sampled_from(["none", "zstd", "auto"]))}


# ---------------------------------------------------------------------- tests
@settings(max_examples=S.examples(80), deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_nested_dictionaries_round_trip_decoded(tmp_path_factory, data):
    table = data.draw(dictionary_tables())
    path = tmp_path_factory.mktemp("d") / "t.rcfmt"
    rcfmt.write_table(table, path, **_options(data.draw))
    with rcfmt.open(path) as f:
        assert f.schema.remove_metadata() == pa.schema([f.with_type(decoded_type(f.type)) for f in table.schema])
        assert_decoded(f.read(), table)
        batches = list(f.iter_batches(batch_size=4))
        assert_decoded(pa.Table.from_batches(batches, schema=f.schema) if batches else f.schema.empty_table(), table)
    case = _filter_case(data, table)
    if case is not None:
        expr, want = case
        got = rcfmt.read_table(path, filter=expr)
        assert got["id"].to_pylist() == want["id"].to_pylist(), expr
        assert_decoded(got, want)


@settings(max_examples=S.examples(25), deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_writer_streaming_and_datasets_of_nested_dictionaries(tmp_path_factory, data):
    """``rcfmt.Writer`` given batches with different dictionaries, and datasets (their own
    conversion of the data, files of few rows, an append) read back decoded."""
    table = data.draw(dictionary_tables(rows=st.integers(0, 15)))
    root = tmp_path_factory.mktemp("w")
    with rcfmt.Writer(root / "t.rcfmt", table.schema, block_rows=data.draw(st.sampled_from([2, 5, 100]))) as w:
        for batch in table.to_batches():
            w.write(batch)
    assert_decoded(rcfmt.read_table(root / "t.rcfmt"), table)
    rcfmt.write_dataset(table, root / "ds", target_file_rows=data.draw(st.sampled_from([4, 1000])))
    rcfmt.write_dataset(table.slice(0, 5), root / "ds", mode="append")
    got = rcfmt.dataset(root / "ds").to_table()
    want = pa.concat_tables([table, table.slice(0, 5)])
    order = pc.sort_indices(got["id"])
    assert sorted(canonical(got.take(order).to_pylist()), key=lambda r: r["id"]) == \
        sorted(canonical(decoded_table(want).to_pylist()),
               key=lambda r: r["id"])
    case = _filter_case(data, want)
    if case is not None:
        expr, kept = case
        got = rcfmt.dataset(root / "ds").to_table(filter=expr)
        assert sorted(got["id"].to_pylist()) == sorted(kept["id"].to_pylist()), expr


def _dict(values: pa.Array, codes, index_type=pa.int8()) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(codes, index_type), values)


def test_the_shapes_of_arrow_testings_generated_nested_dictionary(tmp_path):
    """The shapes of apache/arrow-testing's ``generated_nested_dictionary``: a dictionary of
    lists of dictionary strings, a dictionary of structs of dictionary strings; NULLs at
    both levels, two chunks with their own dictionaries."""
    strs = pa.array(["a", None, "bb", "ccc"])
    inner = pa.list_(pa.field("str_dict", pa.dictionary(pa.int8(), pa.string())))
    lists = pa.array([[0, 1], None, [], [3, 3, 2]], pa.list_(pa.int8()))
    list_values = pa.ListArray.from_arrays(lists.offsets, _dict(strs, lists.values.to_pylist()), type=inner,
                                           mask=lists.is_null())
    st_t = pa.struct([("str_dict_a", pa.dictionary(pa.int8(), pa.string())),
                      ("str_dict_b", pa.dictionary(pa.int8(), pa.string()))])
    structs = pa.StructArray.from_arrays([_dict(strs, [0, None, 3]), _dict(strs, [1, 2, 2])], fields=list(st_t),
                                         mask=pa.array([False, False, True]))
    chunk1 = pa.table({"list_dict": _dict(list_values, [0, None, 3, 3, 1, 2]),
                       "struct_dict": _dict(structs, [2, 1, None, 0, 0, 1])})
    chunk2 = pa.table({"list_dict": _dict(list_values.slice(1, 3), [2, 2, 0, None, 1, 1]),
                       "struct_dict": _dict(structs.slice(1), [None, 1, 0, 1, 0, 0])})
    t = pa.concat_tables([chunk1, chunk2])
    path = tmp_path / "g.rcfmt"
    rcfmt.write_table(t, path, block_rows=4, page_rows=2)
    back = rcfmt.read_table(path)
    assert back.schema == pa.schema([("list_dict", pa.list_(pa.field("str_dict", pa.string()))),
                                     ("struct_dict", pa.struct([("str_dict_a", pa.string()),
                                                                ("str_dict_b", pa.string())]))])
    assert_decoded(back, t)
    for lit in ["a", "ccc", "zz"]:
        got = rcfmt.read_table(path, filter=col("struct_dict.str_dict_a") == lit)
        plain = decoded(t["struct_dict"]).combine_chunks()
        want = t.filter(pc.fill_null(pc.equal(plain.flatten()[0], lit), False))
        assert_decoded(got, want)
    got = rcfmt.read_table(path, filter=col("struct_dict.str_dict_b").is_null())
    assert got.num_rows == pc.sum(pc.is_null(decoded(t["struct_dict"]).combine_chunks().flatten()[1])).as_py()
    assert rcfmt.read_table(path, filter=rcfmt.list_contains(col("list_dict"), "ccc")).num_rows == \
        sum(1 for v in t["list_dict"].to_pylist() if v and "ccc" in v)


@pytest.mark.parametrize("values", [
    # a list inside a struct inside a list
    pa.array([[{"l": [1, None]}, None], None, [], [{"l": None}, {"l": []}]],
             pa.list_(pa.struct([("l", pa.list_(pa.int32()))]))),
    pa.array([[("k", 1.5), ("j", None)], None, [], [("k", float("nan"))]], pa.map_(pa.string(), pa.float64())),
    pa.array([[1, 2], None, [None, 4]], pa.list_(pa.int64(), 2)),
    pa.array([[b"x"], None, []], pa.large_list(pa.binary())),
    pa.array([{"a": {"b": "deep"}}, {"a": None}, None], pa.struct([("a", pa.struct([("b", pa.string())]))])),
], ids=["list_struct_list", "map", "fixed_size_list", "large_list", "struct_struct"])
def test_dictionaries_of_each_nested_kind(tmp_path, values):
    codes = [min(c, len(values) - 1) if c is not None else None for c in [3, 0, None, 0, 2, 1, 1, None, 3, 3]]
    arr = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int16()), values)  # (entry 0 of 3 or 4 never used)
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 2, 5, 9, 9, 9, 9, 9, 9], pa.int32()), arr.slice(1, 9),
                                     mask=pa.array([False, False, True, False, False, False, False, False, False]))
    t = pa.table({"d": arr.slice(1), "l": lists})
    rcfmt.write_table(t, tmp_path / "d.rcfmt", block_rows=3, page_rows=2)
    back = rcfmt.read_table(tmp_path / "d.rcfmt")
    assert back.schema.field("d").type == values.type
    assert_decoded(back, t)


@pytest.mark.parametrize("mode", ["sparse", "dense"])
def test_dictionary_of_a_union(tmp_path, mode):
    types = pa.array([0, 1, 0, 1], pa.int8())
    if mode == "sparse":
        union = pa.UnionArray.from_sparse(types, [pa.array([1, None, 3, 4]), pa.array(["a", "b", None, "d"])],
                                          ["i", "s"])
    else:
        union = pa.UnionArray.from_dense(types, pa.array([0, 0, 1, 1], pa.int32()),
                                         [pa.array([1, None]), pa.array(["a", None])], ["i", "s"])
    arr = pa.DictionaryArray.from_arrays(pa.array([3, 0, None, 1, 1, 2], pa.int8()), union)
    t = pa.table({"u": arr})
    rcfmt.write_table(t, tmp_path / "u.rcfmt", block_rows=4)
    back = rcfmt.read_table(tmp_path / "u.rcfmt")
    assert back.schema.field("u").type == union.type
    # (a NULL index of a union: its first child's NULL, as Arrow's take makes it)
    assert back["u"].to_pylist() == arr.dictionary_decode().to_pylist()


def test_dictionary_indices_outside_the_dictionary_are_located(tmp_path):
    values = pa.array([[1], [2, 3]], pa.list_(pa.int64()))
    bad = pa.DictionaryArray.from_buffers(pa.dictionary(pa.int8(), values.type), 3,
                                          [None, pa.py_buffer(np.array([0, 1, 7], np.int8))], values)
    with pytest.raises(InvalidDataError, match="outside its dictionary") as info:
        rcfmt.write_table(pa.table({"d": bad}), tmp_path / "d.rcfmt")
    assert (info.value.column, info.value.row) == ("d", 2)
    assert not (tmp_path / "d.rcfmt").exists()


def test_a_null_index_into_structs_with_a_not_null_grandchild(tmp_path):
    """A dictionary of structs whose struct child has a NOT NULL field, and a NULL index:
    the values gathered hold a NULL in that field under a NULL parent (valid Arrow), which
    Arrow's cast of the struct as a whole refused, and the writer with it (hypothesis
    drew it in test_random_nested_dictionaries_round_trip_decoded)."""
    low = -(2 ** 63)
    inner = pa.struct([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.int64())])
    values = pa.StructArray.from_arrays(
        [pa.array([{"a": low, "b": low}] * 3, inner),
         pa.array([[]] * 3, pa.large_list(pa.list_(pa.int64(), 1))),
         pa.DictionaryArray.from_arrays(pa.array([0, 0, 0], pa.int8()), pa.array([low], pa.int64()))],
        names=["b", "c", "a"])
    column = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2] * 5 + [None, 1], pa.int8()), values)
    table = pa.table({"id": pa.array(range(17), pa.int64()), "f0": column})
    table.validate(full=True)
    rcfmt.write_table(table, tmp_path / "t.rcfmt", block_rows=3, page_rows=2, compression="none")
    got = rcfmt.read_table(tmp_path / "t.rcfmt")
    assert got["f0"].to_pylist() == table["f0"].to_pylist()
    assert got["f0"].to_pylist()[15] is None
