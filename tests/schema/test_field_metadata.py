"""Arrow field metadata (``PARQUET:field_id``, an unregistered extension's
``ARROW:extension:name``, a user's tags) is kept by files: on flat fields and on every
field of a nested type, any bytes, through every read path (docs/FORMAT.md §5, the
schema entry's ``metadata``). A file whose fields have none is unchanged."""
from __future__ import annotations

import json
import struct

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
from rcfmt import col
from strategies import examples
from schema.test_nested import _rewrite_footer_json

SETTINGS = settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
METADATA = st.none() | st.dictionaries(st.binary(min_size=1, max_size=6) | st.text(min_size=1, max_size=6).map(str.encode),
                                       st.binary(max_size=8), min_size=1, max_size=3)


def _footer(path) -> dict:
    raw = open(path, "rb").read()
    length = struct.unpack("<QI4s", raw[-16:])[0]
    start = len(raw) - 16 - length
    n = struct.unpack("<I", raw[start:start + 4])[0]
    return json.loads(raw[start + 4:start + 4 + n])


@st.composite
def tagged_schemas(draw) -> pa.Schema:
    """A flat int column, a struct (an int child and a list child whose item is tagged
    too) and a map, each field with or without metadata."""
    md = lambda: draw(METADATA)  # noqa: E731
    item = pa.field("item", pa.int32(), metadata=md())
    inner = pa.struct([pa.field("x", pa.int64(), metadata=md()), pa.field("l", pa.list_(item), metadata=md())])
    return pa.schema([pa.field("a", pa.int64(), metadata=md()), pa.field("s", inner, metadata=md()),
                      pa.field("m", pa.map_(pa.string(), pa.int8()), metadata=md())],
                     metadata=draw(st.none() | st.just({"file": "level"})))


@SETTINGS
@given(schema=tagged_schemas(), rows=st.integers(0, 30), data=st.data())
def test_field_metadata_round_trips_on_every_read_path(tmp_path_factory, schema, rows, data):
    values = {"a": list(range(rows)),
              "s": [None if i % 4 == 1 else {"x": i, "l": list(range(i % 3))} for i in range(rows)],
              "m": [[("k", i % 7)] if i % 2 else None for i in range(rows)]}
    table = pa.Table.from_pydict(values, schema=schema)
    path = tmp_path_factory.mktemp("md") / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=data.draw(st.integers(1, 8)))
    back = rcfmt.read_table(path)
    assert back.schema.equals(schema, check_metadata=True), f"{back.schema}\n!=\n{schema}"
    assert back.equals(table)
    with rcfmt.open(path) as f:
        assert f.schema.equals(schema, check_metadata=True)
        assert f.take([0] if rows else []).schema.equals(schema, check_metadata=True)
        for batch in f.iter_batches(batch_size=5):
            assert batch.schema.equals(schema, check_metadata=True)
    picked = rcfmt.read_table(path, columns=["s", "a"], filter=col("a") >= rows // 2)
    assert picked.schema.field("s").equals(schema.field("s"), check_metadata=True)
    assert picked.schema.field("a").equals(schema.field("a"), check_metadata=True)


def test_a_file_without_field_metadata_is_unchanged(tmp_path):
    table = pa.table({"a": [1, 2], "s": [{"x": 1}, None]})
    rcfmt.write_table(table, tmp_path / "t.rcfmt")
    assert all("metadata" not in c for c in _footer(tmp_path / "t.rcfmt")["schema"])


def test_non_utf8_metadata_is_stored_as_base64(tmp_path):
    schema = pa.schema([pa.field("a", pa.int8(), metadata={b"\xff\x00": b"\xfe", b"PARQUET:field_id": b"7"})])
    rcfmt.write_table(pa.table({"a": pa.array([1], pa.int8())}, schema=schema), tmp_path / "t.rcfmt")
    entry = _footer(tmp_path / "t.rcfmt")["schema"][0]["metadata"]
    assert entry == [{"key_base64": "/wA=", "base64": "/g=="}, {"key": "PARQUET:field_id", "value": "7"}]
    assert rcfmt.read_table(tmp_path / "t.rcfmt").schema.field("a").metadata == schema.field("a").metadata


def test_an_unregistered_extension_read_by_pyarrow_keeps_its_name(tmp_path):
    """pyarrow reads an extension it does not know as its storage type with the
    extension's name in the field metadata (arrow-testing's generated_extension): kept."""
    field = pa.field("e", pa.string(), metadata={"ARROW:extension:name": "dict-extension",
                                                 "ARROW:extension:metadata": "dict-extension-serialized"})
    table = pa.table({"e": ["x", None]}, schema=pa.schema([field]))
    rcfmt.write_table(table, tmp_path / "t.rcfmt")
    assert rcfmt.read_table(tmp_path / "t.rcfmt").schema.field("e").metadata == field.metadata


@pytest.mark.parametrize("bad", [{"key": 1, "value": "x"}, {"key": "k"}, "k=v", {"key_base64": "!!", "value": "v"}])
def test_malformed_field_metadata_is_a_corrupt_file(tmp_path, bad):
    schema = pa.schema([pa.field("a", pa.int8(), metadata={"kkkkkkkk": "vvvvvvvv"})])
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"a": pa.array([1], pa.int8())}, schema=schema), path)
    _rewrite_footer_json(path, lambda doc: doc["schema"][0].update(metadata=[bad]))
    with pytest.raises(rcfmt.errors.CorruptFileError):
        rcfmt.read_table(path)
