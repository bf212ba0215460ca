"""Row-level changes (docs/DATASET.md §3.4) in the cases where what a change writes is not
simply its source: target rows sharing a key, a change planned again on a version of
another schema after losing a commit race, and values a column cannot hold exactly."""
from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
from rcfmt import col


def _rows(ds) -> list:
    return sorted(ds.read().to_pylist(), key=repr)


@pytest.mark.parametrize("source_columns", [["id", "v", "w"], ["id", "v"]])
def test_an_upsert_writes_one_row_per_matched_target_row(tmp_path, source_columns):
    """Target rows sharing a key each match the source row (SQL MERGE): each is
    updated, none collapses into another, whether or not the source has every column
    (with every column, an upsert stages the source while it plans)."""
    target = pa.table({"id": pa.array([1, 1, 2], pa.int64()), "v": ["a", "b", "c"], "w": [10, 20, 30]})
    source = pa.table({"id": pa.array([1, 3], pa.int64()), "v": ["new", "ins"], "w": [99, 77]})
    ds = rcfmt.write_dataset(target, str(tmp_path / "d")).merge(source.select(source_columns), on="id")
    full = "w" in source_columns
    want = [{"id": 1, "v": "new", "w": 99 if full else w} for w in (10, 20)]
    want += [{"id": 2, "v": "c", "w": 30}, {"id": 3, "v": "ins", "w": 77 if full else None}]
    assert _rows(ds) == sorted(want, key=repr)
    last = ds.history()[-1]
    assert (last["rows_updated"], last["rows_inserted"], last["rows_deleted"]) == (2, 1, 0)


def test_a_merge_planned_again_reads_and_writes_the_latest_schema(tmp_path):
    """A merge on a handle of an older version loses the commit race and is planned on
    the latest version, as that version's schema says: a column added (and set) since is
    kept from the target where the source lacks it; a column the source has that was
    dropped since is refused, nothing committed."""
    root = str(tmp_path / "added")
    old = rcfmt.write_dataset(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "w": ["a", "b", "c"]}), root)
    rcfmt.dataset(root).evolve(add=[("e", pa.int64())]).update(col("id") == 2, {"e": 5})
    old.merge(pa.table({"id": pa.array([2, 4], pa.int64()), "w": ["B", "D"]}), on="id")
    assert _rows(rcfmt.dataset(root)) == sorted([{"id": 1, "w": "a", "e": None}, {"id": 2, "w": "B", "e": 5},
                                                  {"id": 3, "w": "c", "e": None}, {"id": 4, "w": "D", "e": None}],
                                                 key=repr)
    for name, full in (("dropped", ["id", "w"]), ("dropped_upsert", ["id", "w"])):
        root = str(tmp_path / name)
        old = rcfmt.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64()), "w": ["a", "b"]}), root)
        latest = rcfmt.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64())}), root, mode="overwrite")
        with pytest.raises(rcfmt.SchemaError, match="'w' is not a column of the dataset"):
            old.merge(pa.table({"id": pa.array([1, 9], pa.int64()), "w": ["m", "n"]}).select(full), on="id")
        assert rcfmt.dataset(root).version == latest.version


def test_an_update_planned_again_types_its_values_for_the_latest_schema(tmp_path):
    """An update on a handle of an older version: a column it sets that was dropped since
    is a SchemaError (nothing committed); one widened since (int32 -> int64 by an append)
    takes the value in its new type and the update commits."""
    root = str(tmp_path / "dropped")
    old = rcfmt.write_dataset(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "w": ["a", "b", "c"]}), root)
    latest = rcfmt.dataset(root).evolve(drop=["w"])
    with pytest.raises(rcfmt.SchemaError, match="unknown column 'w'"):
        old.update(col("id") == 1, {"w": "z"})
    assert rcfmt.dataset(root).version == latest.version
    root = str(tmp_path / "widened")
    old = rcfmt.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64()), "u": pa.array([1, 2], pa.int32())}), root)
    rcfmt.write_dataset(pa.table({"id": pa.array([3], pa.int64()), "u": pa.array([2**40], pa.int64())}), root)
    rcfmt.dataset(root).delete(col("id") == 2)
    out = old.update(col("id") == 1, {"u": 5})
    assert out.schema.field("u").type == pa.int64()
    assert _rows(out) == [{"id": 1, "u": 5}, {"id": 3, "u": 2**40}]


_TYPES = {"ts": pa.timestamp("ms"), "tz": pa.timestamp("ms", "UTC"), "d": pa.date32(), "dec": pa.decimal128(7, 2),
          "t": pa.time32("ms"), "f": pa.float32(), "i": pa.int64(), "s": pa.string(), "b": pa.binary()}


@pytest.fixture
def typed(tmp_path):
    row = {"id": [1], "ts": [dt.datetime(2024, 1, 1)], "tz": [dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)],
           "d": [dt.date(2024, 1, 1)], "dec": [decimal.Decimal("1.00")], "t": [dt.time(1)], "f": [1.0], "i": [1],
           "s": ["x"], "b": [b"y"]}
    schema = pa.schema([("id", pa.int64()), *_TYPES.items()])
    return rcfmt.write_dataset(pa.table(row, schema=schema), str(tmp_path / "d"))


@pytest.mark.parametrize("column, value", [
    ("ts", dt.datetime(2024, 1, 1, 0, 0, 0, 1500)),
    ("tz", dt.datetime(2024, 1, 1, 0, 0, 0, 1500, tzinfo=dt.timezone.utc)),
    ("d", dt.datetime(2024, 1, 5, 13, 45)),
    ("t", dt.time(1, 2, 3, 1500)),
    ("dec", pa.scalar(1.555)),
    ("dec", pa.scalar(decimal.Decimal("1.555"), pa.decimal128(4, 3))),
    ("i", pa.scalar(2.5)),
    ("f", pa.scalar(0.1)),
    ("i", "0x10"), ("i", "5"), ("f", "nan"), ("s", dt.date(2024, 1, 2)), ("s", b"raw"), ("b", "text"), ("s", 5),
    ("t", pa.scalar(dt.datetime(2020, 5, 6, 12, 30, 15), pa.timestamp("ms"))),  # (its date would be dropped)
])
def test_an_update_refuses_a_value_its_column_would_store_changed(typed, column, value):
    """A value the column's type would store as another value is a SchemaError, whatever
    its spelling (a Python value or an Arrow scalar): nothing is committed."""
    with pytest.raises(rcfmt.SchemaError, match="not a value of that type"):
        typed.update(col("id") == 1, {column: value})
    assert rcfmt.dataset(typed.root).version == typed.version


@pytest.mark.parametrize("column, value, stored", [
    ("ts", dt.datetime(2024, 1, 1, 0, 0, 0, 2000), dt.datetime(2024, 1, 1, 0, 0, 0, 2000)),
    ("tz", dt.datetime(2024, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))),
     dt.datetime(2024, 1, 1, 0, tzinfo=dt.timezone.utc)),
    ("d", dt.datetime(2024, 1, 5), dt.date(2024, 1, 5)),
    ("t", dt.time(1, 2, 3, 4000), dt.time(1, 2, 3, 4000)),
    ("dec", pa.scalar(2.5), decimal.Decimal("2.50")),
    ("dec", pa.scalar(7, pa.int8()), decimal.Decimal("7.00")),
    ("f", pa.scalar(float("nan")), None),
    ("f", pa.scalar(0.5), 0.5),
    ("i", pa.scalar(5, pa.int8()), 5),
])
def test_an_update_takes_a_value_its_column_holds_exactly(typed, column, value, stored):
    got = typed.update(col("id") == 1, {column: value}).read().column(column)[0].as_py()
    assert got == stored or (stored is None and np.isnan(got))


def test_a_merge_refuses_a_source_its_columns_would_store_changed(typed):
    """A merge source column cast into the dataset's type must keep every value: a
    double rounded into a decimal is refused; exact ones (and NaN into float32) pass."""
    with pytest.raises(rcfmt.SchemaError, match="cannot hold every value"):
        typed.merge(pa.table({"id": pa.array([1], pa.int64()), "dec": pa.array([1.555])}), on="id")
    with pytest.raises(rcfmt.SchemaError, match="cannot hold every value"):  # (a time of day keeps no date)
        typed.merge(pa.table({"id": pa.array([1], pa.int64()),
                              "t": pa.array([dt.datetime(2020, 5, 6, 12, 30, 15)], pa.timestamp("ms"))}), on="id")
    with pytest.raises(rcfmt.SchemaError, match="cannot hold every value"):  # (past the years Python holds)
        typed.merge(pa.table({"id": pa.array([1], pa.int64()),
                              "t": pa.array([400_000 * 365 * 86_400_000], pa.timestamp("ms"))}), on="id")
    assert rcfmt.dataset(typed.root).version == typed.version
    out = typed.merge(pa.table({"id": pa.array([1, 2], pa.int64()), "dec": pa.array([2.5, 0.25]),
                                "f": pa.array([float("nan"), 0.5])}), on="id")
    got = {r["id"]: r for r in out.read().to_pylist()}
    assert got[1]["dec"] == decimal.Decimal("2.50") and got[2]["dec"] == decimal.Decimal("0.25")
    assert np.isnan(got[1]["f"]) and got[2]["f"] == 0.5


@pytest.mark.parametrize("column, values", [
    ("f", pa.array(["5.5"])),  # a string is parsed by a cast
    ("id", pa.array(["1"])),  # (a key too: '1' matched row 1)
    ("i", pa.array([True])),  # a bool is taken for 1
    ("i", pa.array([dt.datetime(2020, 1, 1)], pa.timestamp("s"))),  # an instant for its seconds
    ("s", pa.array([7])),  # a number printed
    ("b", pa.array(["x"])),  # a string for its bytes
    ("d", pa.array([1], pa.int32())),  # a number for a date
])
def test_a_merge_refuses_source_columns_of_another_kind_of_values(typed, column, values):
    """What update and appends refuse, a merge refuses too: a source column whose values
    are another kind (text, bools, instants, numbers) than the dataset's, whatever a
    cast would make of them."""
    source = pa.table({"id": pa.array([1], pa.int64()), column: values}) if column != "id" else \
        pa.table({"id": values, "f": [9.0]})
    with pytest.raises(rcfmt.SchemaError, match="the same kinds of values"):
        typed.merge(source, on="id")
    assert rcfmt.dataset(typed.root).version == typed.version


@pytest.mark.parametrize("key", ["st", "l"])
def test_nested_merge_keys_are_refused_by_name(tmp_path, key):
    t = pa.table({"st": pa.array([{"a": 1}]), "l": pa.array([[1]]), "v": [1]})
    ds = rcfmt.write_dataset(t, str(tmp_path / "d"))
    with pytest.raises(rcfmt.SchemaError, match=f"merge key '{key}' is .*: keys are columns of scalar types"):
        ds.merge(t, on=key)
    assert rcfmt.dataset(ds.root).version == ds.version


@pytest.fixture
def nested(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int64()), ("b", pa.string())])),
                        ("li", pa.list_(pa.int64())), ("lf", pa.list_(pa.float32())),
                        ("fx", pa.list_(pa.int64(), 2)), ("m", pa.map_(pa.string(), pa.int64()))])
    row = {"id": [1, 2], "s": [{"a": 1, "b": "x"}, None], "li": [[1], []], "lf": [[0.5], None],
           "fx": [[1, 2], None], "m": [[("k", 1)], None]}
    return rcfmt.write_dataset(pa.table(row, schema=schema), str(tmp_path / "n"))


@pytest.mark.parametrize("column, value", [
    ("s", {"A": 10}), ("s", {"a": 1, "b": "x", "zz": 3}), ("li", [1.5]), ("li", ["3"]), ("li", [True]),
    ("lf", [0.1]), ("s", {"a": "5", "b": "x"}),
])
def test_an_update_refuses_nested_values_its_column_would_store_changed(nested, column, value):
    """A struct's fields found by name (a misnamed one was stored NULL, an extra one
    dropped), elements kept exactly (1.5 was stored 1, '3' as 3, 0.1 as float32's)."""
    with pytest.raises(rcfmt.SchemaError, match="not a value of that type"):
        nested.update(col("id") == 1, {column: value})
    assert rcfmt.dataset(nested.root).version == nested.version


def test_nested_updates_that_fit_and_updates_of_no_row(nested):
    out = nested.update(col("id") == 2, {"s": {"a": 7, "b": None}, "li": [4, 5], "lf": [0.25, float("nan")],
                                         "fx": (3, 4), "m": {"q": 2}})
    row = out.read(filter=col("id") == 2).to_pylist()[0]
    assert row["s"] == {"a": 7, "b": None} and row["li"] == [4, 5] and row["fx"] == [3, 4]
    assert row["lf"][0] == 0.25 and np.isnan(row["lf"][1]) and row["m"] == [("q", 2)]
    for column, value in [("li", [7]), ("fx", [1, 1]), ("m", {"k": 1}), ("s", {"a": 1, "b": "y"})]:
        assert out.update(col("id") == 99, {column: value}).version == out.version  # (no row: nothing)


def test_a_merge_refuses_nested_source_columns_of_other_fields_or_values(nested):
    key = pa.array([1], pa.int64())
    for column in [pa.array([{"x": 1, "y": "z"}]), pa.array([[0.1]], pa.list_(pa.float64())),
                   pa.array([["3"]]), pa.array([[1.5]])]:
        name = "s" if pa.types.is_struct(column.type) else "lf" if column.to_pylist() == [[0.1]] else "li"
        with pytest.raises(rcfmt.SchemaError, match="merge source column"):
            nested.merge(pa.table({"id": key, name: column}), on="id")
    out = nested.merge(pa.table({"id": key, "li": pa.array([[9]], pa.list_(pa.int32())),
                                 "lf": pa.array([[0.5, float("nan")]], pa.list_(pa.float64()))}), on="id")
    row = out.read(filter=col("id") == 1).to_pylist()[0]
    assert row["li"] == [9] and row["lf"][0] == 0.5 and np.isnan(row["lf"][1])


@pytest.mark.parametrize("source", [
    pa.array([dt.datetime(2024, 1, 1, 5)], pa.timestamp("ns")),
    pa.array([dt.datetime(2024, 1, 1, 5)], pa.timestamp("s")),
    pa.array([dt.datetime(2024, 1, 1, 5, tzinfo=dt.timezone.utc)], pa.timestamp("us", "UTC")),
    pa.array([dt.date(2024, 1, 1)], pa.date32()),
])
def test_a_merge_takes_dictionary_encoded_values_its_column_holds(typed, source):
    """A categorical or dictionary source column is judged by its values, as a plain one
    (no cast back to a dictionary exists: every such source was refused)."""
    column = "tz" if source.type == pa.timestamp("us", "UTC") else "ts"
    out = typed.merge(pa.table({"id": pa.array([1], pa.int64()), column: source.dictionary_encode()}), on="id")
    assert out.read().column(column)[0].as_py() == source.cast(_TYPES[column])[0].as_py()
