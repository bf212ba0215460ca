"""Nested columns (struct, list, large_list, fixed_size_list, map): round trips of random
types and values with NULLs at every level, sub-field projection, filters on leaves under
structs against a brute-force oracle, and damaged files."""
from __future__ import annotations

import json
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
from rcfmt.schema.nested import is_nested
import strategies as S
from rcfmt import col
from rcfmt.errors import InvalidOptionError, RcfmtError, SchemaError

LEAF_TYPES = [pa.int64(), pa.int32(), pa.uint8(), pa.string(), pa.large_string(), pa.float64(), pa.bool_(),
              pa.decimal128(12, 2), pa.date32(), pa.binary(), pa.timestamp("ms", tz="UTC")]
NAMES = st.sampled_from(["a", "b", "c", "x", "id", "val"])


def nested_types(leaves=st.sampled_from(LEAF_TYPES), max_leaves: int = 6):
    def extend(inner):
        fields = st.lists(st.tuples(NAMES, inner, st.booleans()), min_size=1, max_size=3, unique_by=lambda f: f[0])
        return st.one_of(
            fields.map(lambda fs: pa.struct([pa.field(n, t, nl) for n, t, nl in fs])),
            st.tuples(inner, st.booleans()).map(lambda a: pa.list_(pa.field("item", a[0], a[1]))),
            inner.map(pa.large_list),
            st.tuples(inner, st.integers(1, 3)).map(lambda a: pa.list_(a[0], a[1])),
            st.tuples(st.sampled_from([pa.string(), pa.int32()]), inner).map(lambda kv: pa.map_(*kv)),
        )

    return st.recursive(leaves, extend, max_leaves=max_leaves)


def _mask(draw, n: int, nullable: bool):
    if not nullable or not n:
        return None
    mode = draw(st.sampled_from(["none", "some", "all", "some"]))
    if mode == "none":
        return None
    bits = [True] * n if mode == "all" else draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return pa.array(bits, pa.bool_())


@st.composite
def nested_arrays(draw, t: pa.DataType, n: int, nullable: bool = True, hook=None) -> pa.Array:
    """``n`` values of type ``t``; NULLs at every level where allowed, garbage under
    NULL structs and non-empty ranges under NULL lists. ``hook(t, n, nullable)``, asked
    first at every node, may give a strategy of its own for that node (None: the above)."""
    special = None if hook is None else hook(t, n, nullable)
    if special is not None:
        return draw(special)
    if not is_nested(t):
        return draw(S.arrays(t, n, nullable=nullable, sliced=True))
    mask = _mask(draw, n, nullable)
    if pa.types.is_struct(t):
        kids = [draw(nested_arrays(f.type, n, f.nullable, hook)) for f in t]
        return pa.StructArray.from_arrays(kids, fields=list(t), mask=mask)
    if pa.types.is_fixed_size_list(t):
        values = draw(nested_arrays(t.value_type, n * t.list_size, t.value_field.nullable, hook))
        return pa.FixedSizeListArray.from_arrays(values, type=t, mask=mask)
    lengths = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    if pa.types.is_map(t):
        keys = draw(nested_arrays(t.key_type, total, False, hook))
        items = draw(nested_arrays(t.item_type, total, t.item_field.nullable, hook))
        return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), keys, items, type=t, mask=mask)
    values = draw(nested_arrays(t.value_type, total, t.value_field.nullable, hook))
    large = pa.types.is_large_list(t)
    cls = pa.LargeListArray if large else pa.ListArray
    return cls.from_arrays(pa.array(offsets, pa.int64() if large else pa.int32()), values, type=t, mask=mask)


@st.composite
def nested_tables(draw, rows=st.integers(0, 40), max_fields: int = 3):
    n = draw(rows)
    types = draw(st.lists(nested_types(), min_size=1, max_size=max_fields))
    columns = {"id": pa.array(np.arange(n, dtype=np.int64))}
    for i, t in enumerate(types):
        nullable = draw(st.booleans())
        arr = draw(nested_arrays(t, n + 2, nullable))
        columns[f"f{i}"] = (pa.field(f"f{i}", t, nullable), arr.slice(1, n))  # a sliced parent
    fields = [pa.field("id", pa.int64(), False)] + [f for f, _ in list(columns.values())[1:]]
    arrays = [columns["id"]] + [a for _, a in list(columns.values())[1:]]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def canonical(value):
    """A Python value with floats as their bits (NaN payloads, -0.0 kept) for equality."""
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value


def _plain(t: pa.DataType) -> pa.DataType:
    """``t`` with dates and timestamps as their integers (any value converts to Python)."""
    if pa.types.is_date32(t):
        return pa.int32()
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_plain(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_plain(t.key_type)), t.item_field.with_type(_plain(t.item_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_plain(t.value_type)), t.list_size)
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_plain(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_plain(t.value_type)))
    return t


def pylist(arr) -> list:
    return canonical(arr.cast(_plain(arr.type)).to_pylist())


def assert_same(got: pa.Table, want: pa.Table) -> None:
    assert got.schema == want.schema, (got.schema, want.schema)
    got.validate(full=True)
    for name in want.column_names:
        assert pylist(got[name]) == pylist(want[name]), name


def write_options(draw) -> dict:
    return {"block_rows": draw(st.sampled_from([3, 7, 64])), "page_rows": draw(st.sampled_from([2, 5, 1000])),
            "compression": draw(st.sampled_from(["none", "zstd", "lz4", "auto"])),
            "use_threads": draw(st.booleans())}


# ---------------------------------------------------------------------- round trips
@settings(max_examples=S.examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_nested_tables_round_trip(tmp_path_factory, data):
    table = data.draw(nested_tables())
    path = tmp_path_factory.mktemp("n") / "t.rcfmt"
    rcfmt.write_table(table, path, **write_options(data.draw))
    with rcfmt.open(path) as f:
        assert f.schema.remove_metadata() == table.schema
        assert_same(f.read(), table)
        assert_same(f.read(use_threads=False), table)
        batches = list(f.iter_batches(batch_size=5))
        assert_same(pa.Table.from_batches(batches, schema=f.schema) if batches else f.schema.empty_table(), table)
        if f.num_blocks:
            b = data.draw(st.integers(0, f.num_blocks - 1))
            first = int(f.footer.blocks[b]["first_row"])
            assert_same(f.read_block(b), table.slice(first, int(f.footer.blocks[b]["row_count"])))


def test_null_map_over_entries_of_fixed_size_lists(tmp_path):
    """A null map whose range holds an entry (valid Arrow), beside a map whose values are
    fixed_size_lists of fixed_size_lists, in a block of its own: the entries of the
    non-null maps are written, not values from elsewhere (pyarrow 26's filter/take of a
    sliced nested fixed_size_list read the wrong place; found by the round-trip test)."""
    t = pa.map_(pa.string(), pa.list_(pa.list_(pa.int64(), 1), 2))
    entries = pa.StructArray.from_arrays(
        [pa.array(["a", "b", "c"]), pa.array([[[-2**63], [1]], [[2], [3]], [[4], [-2**63]]], t.item_type)],
        fields=[t.key_field, t.item_field])
    offsets = pa.array([0, 0, 1, 1, 2, 3], pa.int32())
    maps = pa.MapArray.from_arrays(offsets, entries.field(0), entries.field(1), type=t,
                                   mask=pa.array([False, False, False, True, False]))
    table = pa.table({"m": maps})
    assert table["m"].to_pylist() == [[], [("a", [[-2**63], [1]])], [], None, [("c", [[4], [-2**63]])]]
    for block_rows in (1, 2, 3, 5):
        rcfmt.write_table(table, tmp_path / "m.rcfmt", block_rows=block_rows, page_rows=2)
        got = rcfmt.read_table(tmp_path / "m.rcfmt")
        got.validate(full=True)
        assert got["m"].to_pylist() == table["m"].to_pylist(), block_rows


@settings(max_examples=S.examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_selected_rows_of_nested_columns(tmp_path_factory, data):
    """A filter on a flat column selects rows; nested columns come back at exactly those."""
    table = data.draw(nested_tables(rows=st.integers(1, 40)))
    path = tmp_path_factory.mktemp("n") / "t.rcfmt"
    rcfmt.write_table(table, path, **write_options(data.draw))
    lo = data.draw(st.integers(0, table.num_rows))
    hi = data.draw(st.integers(lo, table.num_rows))
    got = rcfmt.read_table(path, filter=(col("id") >= lo) & (col("id") < hi))
    assert_same(got, table.slice(lo, hi - lo))


def test_every_nested_kind_by_hand(tmp_path):
    t = pa.table({
        "payload": pa.array([{"user": {"id": 1, "name": "a"}, "x": 1.5}, None, {"user": None, "x": 2.0},
                             {"user": {"id": 4, "name": None}, "x": None}]),
        "tags": pa.array([["a", "b"], [], None, [None, "d"]]),
        "big": pa.array([[1], [2, 3], None, []], pa.large_list(pa.int64())),
        "pair": pa.array([[1, 2], None, [5, None], [7, 8]], pa.list_(pa.int32(), 2)),
        "attrs": pa.array([[("k", 1)], [], None, [("a", 2), ("b", None)]], pa.map_(pa.string(), pa.int64())),
        "deep": pa.array([[[{"a": [1, 2]}]], None, [[None]], [[]]]),
    })
    rcfmt.write_table(t, tmp_path / "t.rcfmt", block_rows=3, page_rows=2)
    with rcfmt.open(tmp_path / "t.rcfmt") as f:
        assert f.schema.remove_metadata() == t.schema
        assert f.physical_schema.names == [
            "payload", "payload.user", "payload.user.id", "payload.user.name", "payload.x", "tags", "tags.item",
            "big", "big.item", "pair", "pair.item", "attrs", "attrs.key", "attrs.value", "deep", "deep.item",
            "deep.item.item", "deep.item.item.a", "deep.item.item.a.item"]
        assert f.footer.extra == {}
        assert_same(f.read(), t)
        # a list's elements, by themselves: one value per element of block 0's non-null lists
        assert f.read_column_chunk(0, f.column_index("tags.item")).to_pylist() == ["a", "b"]
        assert f.element_slots(1) == {f.column_index(c): n for c, n in [
            ("tags.item", 2), ("big.item", 0), ("pair.item", 2), ("attrs.key", 2), ("attrs.value", 2),
            ("deep.item", 1), ("deep.item.item", 0), ("deep.item.item.a", 0), ("deep.item.item.a.item", 0)]}


def test_a_non_nullable_struct_field_holding_nulls_is_refused(tmp_path):
    """A NULL in a field declared not nullable, where its (nullable) struct is valid, is
    refused as a top-level column's would be (it read back as another value); NULLs
    under NULL structs are Arrow's convention and are written."""
    fields = [pa.field("a", pa.int32(), nullable=False), pa.field("b", pa.string(), nullable=False)]
    bad = pa.StructArray.from_arrays([pa.array([10, None, 30], pa.int32()), pa.array(["x", None, "z"])],
                                     fields=fields)
    with pytest.raises(SchemaError, match="field 'a' of struct 's' is not nullable but holds 1 nulls"):
        rcfmt.write_table(pa.table({"s": bad}), tmp_path / "bad.rcfmt")
    inner = pa.StructArray.from_arrays([bad], fields=[pa.field("s", bad.type, nullable=False)])
    with pytest.raises(SchemaError, match="not nullable"):
        rcfmt.write_table(pa.table({"o": inner}), tmp_path / "deeper.rcfmt")
    ok = pa.StructArray.from_arrays([pa.array([10, None, 30], pa.int32()), pa.array(["x", None, "z"])],
                                    fields=fields, mask=pa.array([False, True, False]))
    rcfmt.write_table(pa.table({"s": ok}), tmp_path / "ok.rcfmt")
    assert rcfmt.read_table(tmp_path / "ok.rcfmt").column("s").to_pylist() == [{"a": 10, "b": "x"}, None,
                                                                                {"a": 30, "b": "z"}]
    assert not (tmp_path / "bad.rcfmt").exists()


def test_dictionary_and_view_values_inside_nested_types(tmp_path):
    inner = pa.array(["x", "y", "x", None]).dictionary_encode()
    st_arr = pa.StructArray.from_arrays([inner, pa.array(["p", "q", "r", "s"], pa.string_view())], names=["d", "v"])
    lst = pa.ListArray.from_arrays(pa.array([0, 1, 3, 3, 4], pa.int32()), inner)
    t = pa.table({"s": st_arr, "l": lst})
    rcfmt.write_table(t, tmp_path / "t.rcfmt")
    got = rcfmt.read_table(tmp_path / "t.rcfmt")
    assert got["s"].to_pylist() == st_arr.to_pylist()
    assert got["l"].to_pylist() == lst.to_pylist()
    assert got.schema.field("s").type == pa.struct([("d", pa.string()), ("v", pa.string())])


def test_a_path_that_names_a_leaf_and_a_flat_column_is_kept_but_ambiguous(tmp_path):
    """Struct ``s``'s child ``t`` and a flat column ``s.t`` are both stored as ``s.t``
    (docs/FORMAT.md §5 "Names"): both read back; a filter on ``s.t`` is refused, and a
    projection takes the top-level field of that exact name (as it always has)."""
    table = pa.table({"s": pa.array([{"t": 1}, None]), "s.t": pa.array([2, 3])})
    rcfmt.write_table(table, tmp_path / "b.rcfmt")
    assert rcfmt.read_table(tmp_path / "b.rcfmt").equals(table)
    assert _footer_json(tmp_path / "b.rcfmt")["required_features"] == ["nested", "duplicate_names"]
    with pytest.raises(SchemaError, match="ambiguous"):
        rcfmt.read_table(tmp_path / "b.rcfmt", filter=rcfmt.col("s.t") == 2)
    assert rcfmt.read_table(tmp_path / "b.rcfmt", columns=["s.t"]).equals(table.select([1]))


def test_nested_file_lists_its_required_feature(tmp_path):
    rcfmt.write_table(pa.table({"s": pa.array([{"a": 1}])}), tmp_path / "n.rcfmt")
    rcfmt.write_table(pa.table({"a": pa.array([1])}), tmp_path / "flat.rcfmt")
    assert _footer_json(tmp_path / "n.rcfmt")["required_features"] == ["nested"]
    assert _footer_json(tmp_path / "flat.rcfmt")["required_features"] == []  # flat files stay as before
    assert "nested" not in _footer_json(tmp_path / "flat.rcfmt")


# ---------------------------------------------------------------------- projection
def _prune(arr: pa.Array, path: list[str]) -> pa.Array:
    """``arr`` (a struct) with only the field at ``path`` kept (the oracle of sub-field
    projection)."""
    if not path:
        return arr
    t = arr.type
    i = t.get_field_index(path[0])
    kid = _prune(arr.field(i), path[1:])
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays([kid], fields=[t.field(i).with_type(kid.type)], mask=mask)


def _struct_paths(t: pa.DataType, prefix: tuple = ()) -> list[tuple]:
    out = []
    if pa.types.is_struct(t):
        for f in t:
            out.append((*prefix, f.name))
            out += _struct_paths(f.type, (*prefix, f.name))
    return out


@settings(max_examples=S.examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_sub_field_projection(tmp_path_factory, data):
    fields = st.lists(st.tuples(NAMES, nested_types(max_leaves=4), st.booleans()), min_size=1, max_size=3,
                      unique_by=lambda f: f[0])
    t = data.draw(fields.map(lambda fs: pa.struct([pa.field(n, ft, nl) for n, ft, nl in fs])))
    n = data.draw(st.integers(0, 30))
    arr = data.draw(nested_arrays(t, n))
    table = pa.table({"s": arr, "k": pa.array(np.arange(n))})
    path = tmp_path_factory.mktemp("p") / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=data.draw(st.sampled_from([4, 50])))
    sub = data.draw(st.sampled_from(_struct_paths(t)))
    with rcfmt.open(path) as f:
        scan = f.scan(columns=[".".join(("s", *sub)), "k"])
        got = scan.read()
        want = _prune(arr, list(sub))
        assert got.column_names == ["s", "k"]
        assert got["s"].type == want.type
        assert pylist(got["s"]) == pylist(want)
        got.validate(full=True)
        # only the stored columns of that path are read
        needed = {".".join(("s", *sub[:i])) for i in range(len(sub) + 1)}
        needed |= {name for name in f.physical_schema.names if name.startswith(".".join(("s", *sub)) + ".")}
        needed.add("k")
        read = sum(int(f.footer.chunks[f.column_index(c)]["length"].sum()) for c in needed)
        assert scan.stats.bytes_read <= read


def test_projection_merges_paths_and_rejects_unknown_ones(tmp_path):
    t = pa.table({"p": pa.array([{"u": {"id": 1, "nm": "a"}, "x": 2}, None])})
    rcfmt.write_table(t, tmp_path / "t.rcfmt")
    got = rcfmt.read_table(tmp_path / "t.rcfmt", columns=["p.x", "p.u.id"])
    assert got.schema.field("p").type == pa.struct([("x", pa.int64()), ("u", pa.struct([("id", pa.int64())]))])
    assert got["p"].to_pylist() == [{"x": 2, "u": {"id": 1}}, None]
    assert rcfmt.read_table(tmp_path / "t.rcfmt", columns=["p.u", "p"]).equals(t)
    for bad in ["p.nope", "q", "p.u.id.z"]:
        with pytest.raises(SchemaError, match="unknown column"):
            rcfmt.read_table(tmp_path / "t.rcfmt", columns=[bad])


# ---------------------------------------------------------------------- filters on leaves
def _leaf_under_structs(table: pa.Table, path: list[str]) -> pa.Array:
    """The values of a leaf under structs, NULL wherever a struct on the way is NULL
    (SQL semantics of ``payload.user.id``)."""
    arr = table[path[0]].combine_chunks()
    for name in path[1:]:
        arr = arr.flatten()[arr.type.get_field_index(name)]  # flatten() ANDs the parent's validity
    return arr


LEAF_FILTER_TYPES = st.sampled_from([pa.int64(), pa.int32(), pa.uint8(), pa.string(), pa.binary()])


@settings(max_examples=S.examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_filters_on_struct_leaves_match_brute_force(tmp_path_factory, data):
    """Every pruning stage (block stats, bloom filters, page index, rows) on a leaf under
    structs keeps exactly the rows a brute-force filter keeps."""
    leaf = data.draw(LEAF_FILTER_TYPES)
    inner = pa.struct([pa.field("v", leaf, data.draw(st.booleans())), pa.field("w", pa.int32())])
    t = pa.struct([pa.field("in", inner, data.draw(st.booleans())), pa.field("z", pa.list_(pa.int64()))])
    n = data.draw(st.integers(0, 60))
    arr = data.draw(nested_arrays(t, n))
    # sort some tables so that blocks and pages have narrow ranges to prune by
    table = pa.table({"id": pa.array(np.arange(n)), "s": arr})
    values = _leaf_under_structs(table, ["s", "in", "v"])
    if data.draw(st.booleans()) and n:
        order = pc.array_sort_indices(values, null_placement=data.draw(st.sampled_from(["at_start", "at_end"])))
        table = table.take(order)
        values = _leaf_under_structs(table, ["s", "in", "v"])
    path = tmp_path_factory.mktemp("f") / "t.rcfmt"
    opts = {"block_rows": data.draw(st.sampled_from([5, 16, 100])), "page_rows": data.draw(st.sampled_from([2, 7])),
            "bloom_filter_columns": data.draw(st.sampled_from([None, ["s.in.v"]]))}
    rcfmt.write_table(table, path, **opts)
    present = [v for v in values.to_pylist() if v is not None]
    literal = data.draw(st.sampled_from(present) if present and data.draw(st.booleans())
                        else S.storage_values(leaf).map(lambda v: pa.array([v], leaf)[0].as_py()))
    op = data.draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "is_null", "is_valid", "isin"]))
    c = col("s.in.v")
    scalar = pa.scalar(literal, leaf)
    expr, oracle = {
        "==": (c == literal, lambda: pc.equal(values, scalar)),
        "!=": (c != literal, lambda: pc.not_equal(values, scalar)),
        "<": (c < literal, lambda: pc.less(values, scalar)),
        "<=": (c <= literal, lambda: pc.less_equal(values, scalar)),
        ">": (c > literal, lambda: pc.greater(values, scalar)),
        ">=": (c >= literal, lambda: pc.greater_equal(values, scalar)),
        "is_null": (c.is_null(), lambda: pc.is_null(values)),
        "is_valid": (c.is_valid(), lambda: pc.is_valid(values)),
        "isin": (c.isin([literal]), lambda: pc.is_in(values, pa.array([literal], leaf))),
    }[op]
    want = table.filter(pc.fill_null(oracle(), False))
    with rcfmt.open(path) as f:
        got = f.scan(filter=expr).read()
    assert canonical(got["id"].to_pylist()) == canonical(want["id"].to_pylist())
    assert_same(got, want)


def test_filter_on_struct_leaf_prunes_blocks_and_pages(tmp_path):
    n = 10_000
    payload = pa.StructArray.from_arrays([pa.StructArray.from_arrays([pa.array(np.arange(n))], names=["id"]),
                                          pa.array(np.arange(n) % 7)], names=["user", "k"])
    rcfmt.write_table(pa.table({"payload": payload}), tmp_path / "t.rcfmt", block_rows=1000, page_rows=100)
    with rcfmt.open(tmp_path / "t.rcfmt") as f:
        scan = f.scan(filter=col("payload.user.id") == 4321)
        got = scan.read()
        assert got["payload"].to_pylist() == [{"user": {"id": 4321}, "k": 4321 % 7}]
        assert scan.stats.blocks_pruned_stats == 9
        assert scan.stats.rows_decoded < 1000  # pages of the one kept block were skipped


def test_filters_name_only_leaves_whose_slots_are_rows(tmp_path):
    rcfmt.write_table(pa.table({"s": pa.array([{"a": 1}]), "l": pa.array([[1, 2]])}), tmp_path / "t.rcfmt")
    with rcfmt.open(tmp_path / "t.rcfmt") as f:
        assert f.read(filter=col("s.a") == 1).num_rows == 1
        for name, match in [("l.item", "unknown column"), ("l", "list_contains"),
                            ("s", "is a struct: filter its fields")]:
            with pytest.raises(SchemaError, match=match):
                f.read(filter=col(name) == 1)


# ---------------------------------------------------------------------- damaged files
def _footer_json(path) -> dict:
    raw = path.read_bytes()
    flen = int.from_bytes(raw[-16:-8], "little")
    footer = raw[-16 - flen:-16]
    jlen = int.from_bytes(footer[:4], "little")
    return json.loads(footer[4:4 + jlen])


def _rewrite_footer_json(path, change) -> None:
    """Rewrite the footer's JSON (same length, padded with spaces) and fix the checksum."""
    import zlib

    raw = bytearray(path.read_bytes())
    flen = int.from_bytes(raw[-16:-8], "little")
    start = len(raw) - 16 - flen
    jlen = int.from_bytes(raw[start:start + 4], "little")
    doc = json.loads(raw[start + 4:start + 4 + jlen])
    change(doc)
    doc["created_by"] = ""  # room for longer values
    text = json.dumps(doc, separators=(",", ":")).encode()
    assert len(text) <= jlen
    raw[start + 4:start + 4 + jlen] = text + b" " * (jlen - len(text))
    raw[-8:-4] = zlib.crc32(bytes(raw[start:start + flen])).to_bytes(4, "little")
    path.write_bytes(bytes(raw))


def _lengths_table():
    return pa.table({"l": pa.array([[1, 2], [3], None, [4, 5, 6]] * 50), "m": pa.array([{"a": "x"}] * 200)})


@pytest.mark.parametrize("change, match", [
    (lambda d: d["nested"][0].__setitem__("kind", "struct"), "struct"),
    (lambda d: d["nested"][0].__setitem__("column", 5), "column"),
    (lambda d: d["nested"][0]["children"][0].__setitem__("column", 0), "column"),
    (lambda d: d["nested"][1].__setitem__("children", []), "every column"),  # (a struct may have none)
    (lambda d: d.__setitem__("required_features", []), "required feature"),
    (lambda d: d["nested"][0].__setitem__("kind", "fixed_size_list"), "int32 column"),
    (lambda d: d["nested"].pop(), "every column"),
])
def test_malformed_nested_trees_are_corrupt_files(tmp_path, change, match):
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(_lengths_table(), path)
    _rewrite_footer_json(path, change)
    with pytest.raises(rcfmt.CorruptFileError, match=match):
        rcfmt.read_table(path)


def test_unknown_required_feature_is_refused(tmp_path):
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(_lengths_table(), path)
    _rewrite_footer_json(path, lambda d: d.__setitem__("required_features", ["nested", "zz"]))
    with pytest.raises(rcfmt.UnsupportedError, match="zz"):
        rcfmt.open(path)


def test_list_lengths_that_disagree_with_the_elements_are_located_errors(tmp_path):
    """Lengths that say more (or fewer) elements than the element pages hold, or a
    negative length: a CorruptFileError naming the column and block, never a crash or
    a huge allocation."""
    n = 300
    lengths = pa.array(np.full(n, 2, np.int32))
    for forged, match in [(np.full(n, 3, np.int32), "rows|values"), (np.full(n, 1, np.int32), "rows|values"),
                          (np.r_[[-1], np.full(n - 1, 2)].astype(np.int32), "negative"),
                          (np.full(n, 2**30, np.int32), "values|32-bit|pages")]:
        path = tmp_path / "t.rcfmt"
        good = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32) * 2), pa.array(np.arange(2 * n)))
        rcfmt.write_table(pa.table({"l": good}), path, block_rows=n, encoding={"l": "plain"}, compression="none")
        raw = bytearray(path.read_bytes())
        # the lengths chunk is the first chunk of the block: PLAIN int32 after a 32-byte page header
        with rcfmt.open(path) as f:
            rec = f.footer.chunks[0][0]
            entries = f.page_index(0, 0)
        pos = int(entries["offset"][0]) + 32
        assert np.frombuffer(bytes(raw[pos:pos + 4 * n]), np.int32).tolist() == lengths.to_pylist()
        raw[pos:pos + 4 * n] = forged.tobytes()
        path.write_bytes(bytes(raw))
        with pytest.raises(rcfmt.CorruptFileError, match=match) as info:
            rcfmt.read_table(path, verify_checksums=False)
        assert info.value.block == 0
        assert rec is not None


@pytest.mark.parametrize("forged", [[2**31], [2**62], [2**62] * 4, [2**62, 2**62, 2**62, 2**62 - 2]],
                         ids=["2^31", "2^62", "sum wraps to 0", "sum wraps to the true count"])
def test_forged_large_list_lengths_are_refused_before_rows_are_picked(tmp_path, forged):
    """int64 lengths of a large_list that say more elements than the pages hold (or
    whose int64 sum wraps around, here to the true count) are a CorruptFileError on
    every path: taking a few rows or filtering some out picks positions among the
    elements, and did so before the count was checked (a 16 GiB allocation, or
    numpy's raw ValueError)."""
    n = 64
    path = tmp_path / "t.rcfmt"
    good = pa.array([[str(j) for j in range(2 if i < 4 else i % 3)] for i in range(n)], pa.large_list(pa.string()))
    table = pa.table({"id": np.arange(n), "ll": good})
    rcfmt.write_table(table, path, encoding={"ll": "plain"}, compression="none", dictionary=False)
    raw = bytearray(path.read_bytes())
    with rcfmt.open(path) as f:
        column = [c.name for c in f.footer.columns].index("ll")
        pos = int(f.page_index(0, column)["offset"][0]) + 32  # PLAIN int64 lengths after the page header
    assert np.frombuffer(bytes(raw[pos:pos + 8 * n]), np.int64).tolist() == [len(v) for v in good.to_pylist()]
    raw[pos:pos + 8 * len(forged)] = np.array(forged, np.int64).tobytes()
    path.write_bytes(bytes(raw))
    for read in (lambda f: f.read(), lambda f: f.take([2]), lambda f: f.take(range(10)),
                 lambda f: f.read(filter=rcfmt.col("id") < 3)):
        with rcfmt.open(path, verify_checksums=False) as f, pytest.raises(rcfmt.CorruptFileError) as info:
            read(f)
        assert info.value.block == 0


@settings(max_examples=S.examples(60), deadline=None)
@given(data=st.data())
def test_damaged_nested_files_raise_rcfmt_errors_or_read_valid_arrow(tmp_path_factory, data):
    """Any byte of a nested file changed: reading raises an rcfmt error or returns valid
    Arrow -- with checksums verified, exactly the table written (a change they let
    through is one that changes nothing read); with verification off, of the file's
    schema as damaged."""
    table = data.draw(nested_tables(rows=st.integers(1, 30), max_fields=2))
    path = tmp_path_factory.mktemp("d") / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=8, page_rows=3, compression=data.draw(st.sampled_from(["none", "zstd"])))
    raw = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    path.write_bytes(bytes(raw))
    for verify in (True, False):
        try:
            got = rcfmt.read_table(path, verify_checksums=verify)
        except RcfmtError as exc:
            assert str(exc)
            continue
        got.validate(full=True)
        if verify:
            assert_same(got, table)


# ---------------------------------------------------------------------- tools and datasets
def test_cli_describes_filters_and_prints_nested_files(tmp_path):
    import subprocess
    import sys

    t = pa.table({"id": pa.array(range(6)), "payload": pa.array([{"user": {"id": i}, "tags": ["a"] * i} for i in range(6)]),
                  "m": pa.array([[("k", i)] for i in range(6)], pa.map_(pa.string(), pa.int64()))})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(t, path, block_rows=4)

    def run(*args):
        out = subprocess.run([sys.executable, "-m", "rcfmt.cli", *args, str(path)], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return out.stdout

    schema = json.loads(run("schema", "--json"))
    assert [c["type"] for c in schema["columns"]] == [str(f.type) for f in t.schema]
    assert json.loads(run("check", "--json"))["ok"]
    rows = [json.loads(line) for line in run("cat", "--format", "json", "--filter", "payload.user.id > 3").splitlines()]
    assert rows == [{"id": i, "payload": {"user": {"id": i}, "tags": ["a"] * i}, "m": [["k", i]]} for i in (4, 5)]
    csv_text = run("cat", "--filter", "`payload.user.id` = 1")
    assert csv_text.splitlines()[1] == '1,"{""user"": {""id"": 1}, ""tags"": [""a""]}","[[""k"", 1]]"'
    rows = [json.loads(line)["id"] for line in run("cat", "--format", "json", "--filter",
                                                    "array_contains(payload.tags, 'a') AND payload.user.id < 3")
            .splitlines()]
    assert rows == [1, 2]
    pages = json.loads(run("pages", "--json"))
    assert {p["column"] for p in pages} >= {"payload.tags.item", "m.key"}


def _events(n: int, seed: int) -> pa.Table:
    """GitHub-event-like rows: a repo struct, an actor struct with a nested org, a
    payload with lists and a map."""
    rng = np.random.default_rng(seed)
    ids = np.arange(seed * 1000, seed * 1000 + n)
    repo = pa.StructArray.from_arrays([pa.array(rng.integers(0, 50, n)), pa.array([f"r{i % 13}" for i in range(n)])],
                                      names=["id", "name"])
    org = pa.StructArray.from_arrays([pa.array(rng.integers(0, 5, n))], names=["id"],
                                     mask=pa.array(rng.random(n) < 0.3))
    actor = pa.StructArray.from_arrays([pa.array([f"user{i % 17}" for i in range(n)]), org], names=["login", "org"])
    labels = pa.array([None if i % 7 == 0 else [f"l{j}" for j in range(i % 4)] for i in range(n)])
    attrs = pa.array([[("k", int(i))] if i % 2 else [] for i in ids], pa.map_(pa.string(), pa.int64()))
    return pa.table({"id": pa.array(ids), "kind": pa.array(["push", "issue"] * (n // 2) + ["push"] * (n % 2)),
                     "repo": repo, "actor": actor, "labels": labels, "attrs": attrs})


def test_nested_datasets_write_append_prune_project_and_optimize(tmp_path):
    root = tmp_path / "events"
    first, second = _events(300, 1), _events(200, 2)
    rcfmt.write_dataset(first, root, partition_by=["kind"], block_rows=50)
    rcfmt.write_dataset(second, root, block_rows=50)  # append
    ds = rcfmt.dataset(root)
    both = pa.concat_tables([first, second])
    assert ds.schema.field("actor").type == first.schema.field("actor").type
    got = ds.read().sort_by("id")
    want = both.select(got.column_names).sort_by("id")
    assert_same(got, want)
    # file pruning from the index's statistics of a leaf under structs
    stats = ds.stats_arrays("actor.org.id")
    assert stats.null_count.sum() == pc.sum(pc.is_null(_leaf_under_structs(both, ["actor", "org", "id"]))).as_py()
    for expr, oracle in [(col("repo.id") >= 49, lambda t: pc.greater_equal(t["repo"].combine_chunks().field("id"), 49)),
                         (col("actor.org.id").is_null(),
                          lambda t: pc.is_null(_leaf_under_structs(t, ["actor", "org", "id"]))),
                         (col("id") >= 2150, lambda t: pc.greater_equal(t["id"], 2150))]:
        scan = ds.scan(columns=["id", "actor.org", "labels"], filter=expr)
        got = scan.read().sort_by("id")
        assert got["id"].to_pylist() == both.filter(oracle(both)).sort_by("id")["id"].to_pylist()
        assert got.schema.field("actor").type == pa.struct([first.schema.field("actor").type.field("org")])
    assert ds.scan(filter=col("id") >= 2150).stats.files_pruned == 2  # the first write's files
    ds.optimize(target_file_rows=10_000)
    assert_same(rcfmt.dataset(root).read().sort_by("id"), want)


def test_datasets_refuse_appends_whose_nesting_differs(tmp_path):
    rcfmt.write_dataset(pa.table({"s": pa.array([{"a": 1}])}), tmp_path / "ds")
    with pytest.raises(SchemaError):
        rcfmt.write_dataset(pa.table({"s": pa.array([{"b": 1}])}), tmp_path / "ds")
    with pytest.raises(SchemaError):
        rcfmt.write_dataset(pa.table({"s": pa.array([[1]])}), tmp_path / "ds")
    assert rcfmt.dataset(tmp_path / "ds").read().num_rows == 1


def test_read_dictionary_naming_a_stored_column_of_a_nested_field(tmp_path):
    """Found by fuzzing: ``read_dictionary`` naming a column under a struct (by its
    stored name) returned a struct whose child was a DictionaryArray its type did not
    declare. Parts of a nested field come back as the schema says."""
    t = pa.table({"st": pa.array([{"a": i % 3, "b": "x"} for i in range(50)]), "k": pa.array(["p", "q"] * 25)})
    rcfmt.write_table(t, tmp_path / "t.rcfmt")
    with rcfmt.open(tmp_path / "t.rcfmt") as f:
        got = f.scan(read_dictionary=["st.a", "k"], filter=col("st.a") >= 0).read()
    assert got.schema.field("st").type == t.schema.field("st").type
    assert got["st"].to_pylist() == t["st"].to_pylist()
    assert pa.types.is_dictionary(got.schema.field("k").type)


# ---------------------------------------------------------------------- list_contains
def _contains_3vl(lst, value):
    """SQL array_contains: NULL for a NULL list; TRUE on a hit; else NULL if an element is
    NULL, FALSE otherwise."""
    if lst is None:
        return None
    if any(x is not None and x == value for x in lst):
        return True
    return None if any(x is None for x in lst) else False


@settings(max_examples=S.examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_list_contains_matches_brute_force(tmp_path_factory, data):
    """Block statistics and bloom filters of the elements prune, rows are decided on the
    lists: the rows equal SQL array_contains on the same data, negated and combined too."""
    from rcfmt import list_contains

    item = data.draw(st.sampled_from([pa.int32(), pa.int64(), pa.string(), pa.date32()]))
    kind = data.draw(st.sampled_from(["list", "large_list", "fixed", "under_struct"]))
    list_type = {"list": pa.list_(item), "large_list": pa.large_list(item), "fixed": pa.list_(item, 2),
                 "under_struct": pa.list_(item)}[kind]
    n = data.draw(st.integers(0, 50))
    lists = data.draw(nested_arrays(list_type, n))
    if kind == "under_struct":
        outer = data.draw(_mask_strategy(n))
        column = pa.StructArray.from_arrays([lists], names=["l"], mask=outer)
        name, values = "s.l", _leaf_under_structs(pa.table({"s": column}), ["s", "l"])
    else:
        column, name, values = lists, "l", lists
    table = pa.table({"id": pa.array(np.arange(n)), name.split(".")[0]: column})
    path = tmp_path_factory.mktemp("lc") / "t.rcfmt"
    element = f"{name}.item"
    rcfmt.write_table(table, path, block_rows=data.draw(st.sampled_from([4, 16, 64])), page_rows=3,
                      bloom_filter_columns=data.draw(st.sampled_from([None, [element]])))
    py = values.cast(_plain(values.type)).to_pylist()
    present = [x for lst in py if lst for x in lst if x is not None]
    if present and data.draw(st.booleans()):
        literal = data.draw(st.sampled_from(present))
    else:
        literal = data.draw(st.integers(-5, 5)) if item != pa.string() else data.draw(st.text(max_size=3))
    arg = pa.scalar(literal, pa.int32()).cast(item) if item == pa.date32() else literal
    truth = [_contains_3vl(lst, literal) for lst in py]
    negate = data.draw(st.booleans())
    expr = list_contains(col(name), arg)
    want = [i for i, t in enumerate(truth) if t is (not negate)]
    if negate:
        expr = ~expr
    if data.draw(st.booleans()):  # combined with a row column
        cut = data.draw(st.integers(0, max(n, 1)))
        if data.draw(st.booleans()):
            expr = expr & (col("id") < cut)
            want = [i for i in range(n) if truth[i] is (not negate) and i < cut]
        else:
            expr = expr | (col("id") == cut)
            want = [i for i in range(n) if truth[i] is (not negate) or i == cut]
    with rcfmt.open(path) as f:
        got = f.scan(filter=expr).read()
    assert got["id"].to_pylist() == want, (expr, py)
    got.validate(full=True)


@st.composite
def _mask_strategy(draw, n):
    return _mask(draw, n, True)


def test_list_contains_refuses_what_it_cannot_mean(tmp_path):
    from rcfmt import list_contains

    rcfmt.write_table(pa.table({"l": pa.array([[[1]]]), "x": pa.array([1]), "m": pa.array([[("a", 1)]],
                                                                                    pa.map_(pa.string(), pa.int64()))}),
                      tmp_path / "t.rcfmt")
    with rcfmt.open(tmp_path / "t.rcfmt") as f:
        for bad, err in [(list_contains("l", 1), rcfmt.FilterError), (list_contains("x", 1), rcfmt.FilterError),
                         (list_contains("m", "a"), rcfmt.SchemaError), (list_contains("zz", 1), rcfmt.SchemaError)]:
            with pytest.raises(err):
                f.read(filter=bad)
    with pytest.raises(rcfmt.FilterError, match="non-null"):
        list_contains("l", None)


def test_list_contains_on_datasets_with_files_lacking_the_list(tmp_path):
    from rcfmt import list_contains

    n = 300
    t = pa.table({"id": pa.array(range(n)), "tags": pa.array([[f"t{i % 50}", f"u{i}"] if i % 9 else None
                                                            for i in range(n)])})
    root = tmp_path / "ds"
    rcfmt.write_dataset(t, root, block_rows=50, bloom_filter_columns=["tags.item"])
    rcfmt.write_dataset(pa.table({"id": pa.array([1000])}), root)  # a file without the list
    ds = rcfmt.dataset(root)
    scan = ds.scan(filter=list_contains("tags", "u123"))
    assert scan.read().to_pylist() == [{"id": 123, "tags": ["t23", "u123"]}]
    assert scan.stats.blocks_pruned_bloom + scan.stats.blocks_pruned_stats == 5  # 6 blocks, one holds u123
    assert scan.stats.files_pruned == 1  # the file without the list (the index has no stats of elements)
    # NULL lists, and the file without the column, are NULL under negation too
    got = ds.read(filter=~list_contains("tags", "u1"), columns=["id"])["id"].to_pylist()
    assert sorted(got) == [i for i in range(n) if i % 9 and i != 1]


def test_sql_filters_name_struct_paths_and_array_contains():
    from rcfmt.schema.nested import bind_schema
    from rcfmt.predicate.sql_filter import parse_filter

    schema = bind_schema(pa.schema([("p", pa.struct([("u", pa.struct([("id", pa.int64()), ("ok", pa.bool_())])),
                                                     ("tags", pa.list_(pa.string()))])),
                                    ("d", pa.list_(pa.date32()))]))
    assert repr(parse_filter("p.u.id = 3", schema)) == repr(col("p.u.id") == 3)
    # a boolean leaf on its own (its path's parts were taken for modifiers the filter does not translate)
    assert repr(parse_filter("p.u.ok", schema)) == repr(col("p.u.ok") == True)  # noqa: E712
    assert repr(parse_filter("NOT p.u.ok", schema)) == repr(col("p.u.ok") == False)  # noqa: E712
    from rcfmt import list_contains
    import datetime as dt

    assert repr(parse_filter("array_contains(p.tags, 'x')", schema)) == repr(list_contains("p.tags", "x"))
    assert repr(parse_filter("NOT array_contains(d, DATE '2024-01-02')", schema)) == \
        repr(~list_contains("d", dt.date(2024, 1, 2)))
    for bad, why in [("array_contains(p.u.id, 1)", "needs a list column"), ("array_contains(nope, 1)", "unknown column"),
                     ("p.tags = 'x'", "is a list")]:
        with pytest.raises(InvalidOptionError, match=why):  # (sql_filter's one error for a filter it refuses)
            parse_filter(bad, schema)


def test_a_filter_naming_a_struct_points_to_its_fields(tmp_path):
    """A struct is filtered by its leaves' dotted paths: naming the struct itself is a
    SchemaError that lists them (not "unknown column")."""
    t = pa.table({"st": pa.array([{"a": 1, "b": {"c": "x"}}, None])})
    rcfmt.write_table(t, tmp_path / "t.rcfmt")
    for expr in (rcfmt.col("st").is_null(), rcfmt.col("st") == 1, rcfmt.col("st.b").is_valid()):
        with pytest.raises(SchemaError, match="is a struct: filter its fields by their dotted paths") as info:
            rcfmt.read_table(tmp_path / "t.rcfmt", filter=expr)
        assert "'st.b.c'" in str(info.value)
    with pytest.raises(SchemaError, match="unknown column 'nope'"):
        rcfmt.read_table(tmp_path / "t.rcfmt", filter=rcfmt.col("nope") == 1)


def test_a_filter_naming_a_map_union_or_empty_struct_says_it_cannot_filter_them(tmp_path):
    t = pa.table({
        "m": pa.array([[("a", 1)], None], pa.map_(pa.string(), pa.int32())),
        "u": pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()), [pa.array([1, 2]), pa.array(["a", "b"])]),
        "s": pa.StructArray.from_arrays([pa.StructArray.from_arrays([], fields=[], mask=pa.array([False, True]))],
                                        names=["e"]),
        "i": [0, 1],
    })
    rcfmt.write_table(t, tmp_path / "n.rcfmt")
    for name in ["m", "u", "s.e"]:
        with pytest.raises(SchemaError, match=f"column '{name}' cannot be filtered"):
            rcfmt.read_table(tmp_path / "n.rcfmt", filter=col(name).is_null())
    with pytest.raises(SchemaError, match="unknown column 'nope'"):
        rcfmt.read_table(tmp_path / "n.rcfmt", filter=col("nope") == 1)
    assert rcfmt.read_table(tmp_path / "n.rcfmt", filter=col("i") == 1).column("m").to_pylist() == [None]
