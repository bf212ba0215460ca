"""Repeated and empty field names, which Arrow allows (apache/arrow-testing's
``generated_duplicate_fieldnames`` and ``generated_union`` files hold them): a file keeps
them, columns being addressed by position (docs/FORMAT.md §5 "Names"); only a lookup by a
name that more than one field answers is refused, with a SchemaError naming it."""
from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
from rcfmt import col
from rcfmt.errors import CorruptFileError, SchemaError, UnsupportedError
from rcfmt.format import layout
from oracle_filter import filter_table
from strategies import examples

SETTINGS = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = ["a", "b", "", "a.b", "é"]
FLAT = [pa.int64(), pa.string(), pa.float64()]


def _footer(path) -> dict:
    raw = open(path, "rb").read()
    length, _, _ = struct.unpack("<QI4s", raw[-16:])
    start = len(raw) - 16 - length
    n = struct.unpack("<I", raw[start:start + 4])[0]
    return json.loads(raw[start + 4:start + 4 + n])


def _values(draw, t: pa.DataType, n: int) -> pa.Array:
    if pa.types.is_struct(t):
        kids = [_values(draw, f.type, n) for f in t]
        mask = pa.array([draw(st.booleans()) and draw(st.booleans()) for _ in range(n)], pa.bool_())
        return pa.StructArray.from_arrays(kids, fields=list(t), mask=mask)
    if pa.types.is_integer(t):
        one = st.integers(-50, 50)
    elif pa.types.is_floating(t):
        one = st.floats(allow_nan=False, width=64)  # (Table.equals holds NaN unequal)
    else:
        one = st.sampled_from(["", "x", "prefix-prefix-prefix-a", "prefix-prefix-prefix-b", "é"])
    return pa.array(draw(st.lists(st.none() | one, min_size=n, max_size=n)), t)


@st.composite
def repeated_tables(draw) -> pa.Table:
    """Tables whose top-level names and struct children's names repeat (and may be empty)."""
    k = draw(st.integers(1, 5))
    n = draw(st.integers(0, 40))
    fields = []
    for _ in range(k):
        name = draw(st.sampled_from(NAMES))
        if draw(st.integers(0, 3)) == 0:
            kids = [pa.field(draw(st.sampled_from(NAMES)), draw(st.sampled_from(FLAT))) for _ in range(draw(st.integers(1, 3)))]
            fields.append(pa.field(name, pa.struct(kids)))
        else:
            fields.append(pa.field(name, draw(st.sampled_from(FLAT))))
    columns = []
    for f in fields:
        arr = _values(draw, f.type, n)
        cut = draw(st.integers(0, n))
        columns.append(pa.chunked_array([arr.slice(0, cut), arr.slice(cut)], f.type))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


@SETTINGS
@given(table=repeated_tables(), block_rows=st.integers(1, 16), page_rows=st.integers(1, 8), data=st.data())
def test_repeated_names_round_trip_and_filter_like_pyarrow(tmp_path_factory, table, block_rows, page_rows, data):
    path = tmp_path_factory.mktemp("dup") / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=block_rows, page_rows=page_rows)
    assert rcfmt.read_table(path).equals(table)
    with rcfmt.open(path) as f:
        positions = data.draw(st.lists(st.integers(0, max(table.num_rows - 1, 0)), max_size=6)) \
            if table.num_rows else []
        assert f.take(positions).equals(table.take(pa.array(positions, pa.int64())))
        batches = list(f.iter_batches(batch_size=7))
        assert pa.Table.from_batches(batches, schema=f.schema).equals(table)
    names = table.schema.names
    repeats = {n for n in names if names.count(n) > 1}
    assert ("duplicate_names" in _footer(path)["required_features"]) == \
        (bool(repeats) or any(len({c.name for c in fl.type}) < fl.type.num_fields
                               for fl in table.schema if pa.types.is_struct(fl.type))
         or _paths_repeat(table.schema))
    # a filter on a column named once agrees with pyarrow's answer on the same table
    flat = [f.name for f in table.schema if f.name not in repeats and not pa.types.is_struct(f.type)
            and pa.types.is_integer(f.type) and f.name not in _struct_paths(table.schema)]
    if flat:
        name = data.draw(st.sampled_from(flat))
        v = data.draw(st.integers(-50, 50))
        for expr in (col(name) > v, ~(col(name) == v), col(name).is_null()):
            assert rcfmt.read_table(path, filter=expr).equals(filter_table(table, expr))
    # a name more than one field answers is refused, in a projection and in a filter
    for name in repeats:
        with pytest.raises(SchemaError, match="ambiguous"):
            rcfmt.read_table(path, columns=[name])
        if not any(pa.types.is_struct(f.type) for f in table.schema if f.name == name):
            with pytest.raises(SchemaError, match="ambiguous"):
                rcfmt.read_table(path, filter=col(name).is_null())


def _struct_paths(schema: pa.Schema) -> set:
    return {f"{f.name}.{c.name}" for f in schema if pa.types.is_struct(f.type) for c in f.type}


def _paths_repeat(schema: pa.Schema) -> bool:
    paths = []
    for f in schema:
        paths.append(f.name)
        if pa.types.is_struct(f.type):
            paths += [f"{f.name}.{c.name}" for c in f.type]
    return len(set(paths)) != len(paths)


def _corpus_like() -> pa.Table:
    """The shape of arrow-testing's generated_duplicate_fieldnames: two top-level
    ``ints`` and a struct of two children named ``""``."""
    inner = pa.StructArray.from_arrays([pa.array([1296194679, None, 3], pa.int32()), pa.array(["ôjllc4i", "x", None])],
                                       names=["", ""])
    return pa.Table.from_arrays([pa.array([None, 1, -3], pa.int8()), pa.array([None, 7, 8], pa.int32()), inner],
                                names=["ints", "ints", "struct"])


def test_the_corpus_shape_round_trips_and_refuses_only_ambiguous_lookups(tmp_path):
    table = _corpus_like()
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path)
    back = rcfmt.read_table(path)
    assert back.equals(table) and back.schema.names == ["ints", "ints", "struct"]
    assert rcfmt.read_table(path, columns=["struct"]).column(0).equals(table.column(2))
    with pytest.raises(SchemaError, match=r"'ints' is ambiguous: 2 fields have it \(positions \[0, 1\]\)"):
        rcfmt.read_table(path, columns=["ints"])
    with pytest.raises(SchemaError, match="'struct.' is ambiguous"):
        rcfmt.read_table(path, columns=["struct."])
    with pytest.raises(SchemaError, match="ambiguous"):
        rcfmt.read_table(path, filter=col("ints") == 1)
    with pytest.raises(SchemaError, match="ambiguous"):
        rcfmt.read_table(path, filter=col("struct.") == 3)
    with rcfmt.open(path) as f:
        with pytest.raises(SchemaError, match="ambiguous"):
            f.block_stats("ints")
        assert f.block_stats(1).null_count.tolist() == [1]  # by position
        assert f.take([2, 0]).equals(table.take([2, 0]))
    assert _footer(path)["required_features"] == ["nested", "duplicate_names"]


def test_a_filter_on_another_column_returns_every_repeated_one(tmp_path):
    table = pa.Table.from_arrays([pa.array([1, 2, 3]), pa.array(["x", "y", "z"]), pa.array([4.0, 5.0, 6.0])],
                                 names=["a", "a", "b"])
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=2)
    got = rcfmt.read_table(path, filter=col("b") > 4.5)
    assert got.equals(table.filter(pc.greater(table.column(2), 4.5)))
    assert rcfmt.read_table(path, columns=["b"]).column_names == ["b"]
    with rcfmt.open(path) as f:
        assert f.scan(None, col("b") >= 6).read().equals(table.slice(2))
        assert f.read_block(1).equals(table.slice(2))
    assert _footer(path)["required_features"] == ["duplicate_names"]


def test_unions_whose_children_or_neighbours_repeat_names(tmp_path):
    u = pa.UnionArray.from_sparse(pa.array([0, 1, 0], pa.int8()), [pa.array([1, 2, 3]), pa.array(["a", "b", "c"])],
                                  field_names=["x", "x"])
    d = pa.UnionArray.from_dense(pa.array([1, 0, 1], pa.int8()), pa.array([0, 0, 1], pa.int32()),
                                 [pa.array([5], pa.int16()), pa.array([b"p", b"q"])], field_names=["f", "f"])
    table = pa.Table.from_arrays([u, d, u, d], names=["sparse", "dense", "sparse", "dense"])
    path = tmp_path / "u.rcfmt"
    rcfmt.write_table(table, path)
    assert rcfmt.read_table(path).equals(table)


def test_write_options_that_name_a_repeated_column_are_refused(tmp_path):
    table = pa.Table.from_arrays([pa.array([1, 2, 3]), pa.array(["x", "y", "z"]), pa.array([4, 5, 6])],
                                 names=["a", "a", "b"])
    for options in ({"encoding": {"a": "plain"}}, {"bloom_filter_columns": ["a"]},
                    {"bitmap_indexes": {"a": "equality"}}, {"cluster_by": "a"}):
        with pytest.raises(SchemaError, match=f"{next(iter(options))}: column name 'a' is ambiguous"):
            rcfmt.write_table(table, tmp_path / "x.rcfmt", **options)
        assert not (tmp_path / "x.rcfmt").exists()
    # options naming other columns, and the encoding of every column, are fine
    rcfmt.write_table(table, tmp_path / "ok.rcfmt", encoding="plain", bloom_filter_columns=["b"], cluster_by="b")
    assert rcfmt.read_table(tmp_path / "ok.rcfmt").equals(table)


def test_datasets_refuse_repeated_and_empty_names(tmp_path):
    table = pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4])], names=["a", "a"])
    with pytest.raises(SchemaError, match=r"column names \[.a.\] repeat"):
        rcfmt.write_dataset(table, tmp_path / "ds")
    with pytest.raises(SchemaError, match="non-empty names"):
        rcfmt.write_dataset(pa.table({"": [1]}), tmp_path / "ds")
    assert not (tmp_path / "ds").exists()


def test_empty_names_round_trip_and_are_addressable(tmp_path):
    table = pa.Table.from_arrays([pa.array([1, 2, 3]), pa.array(["x", "y", "z"])], names=["", "b"])
    path = tmp_path / "e.rcfmt"
    rcfmt.write_table(table, path)
    assert rcfmt.read_table(path).equals(table)
    assert rcfmt.read_table(path, columns=[""], filter=col("") >= 2).column(0).to_pylist() == [2, 3]
    assert "duplicate_names" not in _footer(path)["required_features"]


def test_a_reader_that_predates_repeated_names_refuses_the_file(tmp_path, monkeypatch):
    table = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    rcfmt.write_table(table, tmp_path / "t.rcfmt")
    monkeypatch.setattr(layout, "KNOWN_FEATURES", frozenset({"nested"}))
    import rcfmt.format.footer as footer

    monkeypatch.setattr(footer, "KNOWN_FEATURES", frozenset({"nested"}))
    with pytest.raises(UnsupportedError, match="duplicate_names"):
        rcfmt.read_table(tmp_path / "t.rcfmt")


def test_a_footer_that_repeats_a_name_without_the_feature_is_corrupt(tmp_path):
    table = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "b"])
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path)
    raw = path.read_bytes()
    length = struct.unpack("<QI4s", raw[-16:])[0]
    start = len(raw) - 16 - length
    footer = raw[start:-16]
    for spelling in (b'"name": "b"', b'"name":"b"'):
        footer = footer.replace(spelling, spelling.replace(b'"b"', b'"a"'))  # (same length: offsets hold)
    assert footer != raw[start:-16]
    tail = struct.pack("<QI4s", length, zlib.crc32(footer), raw[-4:])
    path.write_bytes(raw[:start] + footer + tail)
    with pytest.raises(CorruptFileError, match="duplicate column name 'a' without the 'duplicate_names'"):
        rcfmt.read_table(path)


def test_polars_refuses_repeated_names_by_name(tmp_path):
    pytest.importorskip("polars")
    from rcfmt.polars import scan_rcfmt

    rcfmt.write_table(pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"]), tmp_path / "t.rcfmt")
    with pytest.raises(SchemaError, match=r"\['a'\] repeat, which a Polars frame cannot hold"):
        scan_rcfmt(tmp_path / "t.rcfmt")


def test_the_cli_shows_repeated_names_apart(tmp_path):
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(_corpus_like(), path)
    out = subprocess.run([sys.executable, "-m", "rcfmt.cli", "head", "--json", str(path)], capture_output=True, text=True,
                         check=True).stdout
    rows = json.loads(out)
    assert rows[1] == {"ints [0]": 1, "ints [1]": 7, "struct": {" [0]": None, " [1]": "x"}}
    text = subprocess.run([sys.executable, "-m", "rcfmt.cli", "inspect", str(path)], capture_output=True, text=True,
                          check=True).stdout
    assert text.count("\nints ") == 2 and text.count("\nstruct. ") == 2
