"""What rcfmt writes, rcfmt reads back: input the reader would refuse is refused at write.

Arrays built from buffers can hold what Arrow's full validation refuses (ill-formed
UTF-8, decimals beyond their precision, offsets that go backwards, dictionary indices
outside the dictionary). ``write_table``, the streaming ``Writer`` and
``write_dataset`` used to write them, and the reader then refused the file
(``CorruptFileError``). They now raise ``InvalidDataError`` naming the stored column and
the first bad row, before anything is visible at the target. Bytes under NULL strings,
which Arrow allows, are written (as empty slots) and read back."""
from __future__ import annotations

import decimal
import os

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
from rcfmt import InvalidDataError


# ---------------------------------------------------------------- arrays built by hand
def decimals(unscaled: list[int], precision=3, scale=2, nulls=()) -> pa.Array:
    """decimal128 values from their unscaled integers, whatever the precision says."""
    raw = b"".join(v.to_bytes(16, "little", signed=True) for v in unscaled)
    return pa.Array.from_buffers(pa.decimal128(precision, scale), len(unscaled), [_validity(len(unscaled), nulls),
                                                                                pa.py_buffer(raw)], len(nulls))


def strings(values: list[bytes], nulls=(), t=pa.string()) -> pa.Array:
    """strings (or binaries) holding exactly ``values``' bytes, NULL at ``nulls``."""
    offsets = np.zeros(len(values) + 1, np.int64 if t in (pa.large_string(), pa.large_binary()) else np.int32)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    return pa.Array.from_buffers(t, len(values), [_validity(len(values), nulls), pa.py_buffer(offsets),
                                                  pa.py_buffer(b"".join(values))], len(nulls))


def _validity(n: int, nulls) -> pa.Buffer | None:
    if not nulls:
        return None
    valid = np.ones(n, bool)
    valid[list(nulls)] = False
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


BAD_UTF8 = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\xf4\x90\x80\x80"]  # invalid, overlong,
# surrogate, truncated, beyond U+10FFFF


def _nothing_at(target) -> None:
    assert not os.path.exists(target)
    assert os.listdir(os.path.dirname(target)) == []  # no temporary file left either


@pytest.fixture
def target(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    return str(out / "t.rcfmt")


# ---------------------------------------------------------------- the cases
def test_a_decimal_beyond_its_precision_is_refused(target):
    column = decimals([110, 12810, 5])  # 1.10, 128.10 (needs 5 digits), 0.05
    table = pa.table({"id": [1, 2, 3], "d": column})
    with pytest.raises(pa.ArrowInvalid):
        table.validate(full=True)  # (invalid Arrow)
    with pytest.raises(InvalidDataError, match=r"decimal value 128\.10 beyond the declared precision") as info:
        rcfmt.write_table(table, target)
    assert (info.value.column, info.value.row) == ("d", 1)
    assert "column='d', row=1" in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, rcfmt.RcfmtError)
    _nothing_at(target)


@pytest.mark.parametrize("bad", BAD_UTF8)
@pytest.mark.parametrize("t", [pa.string(), pa.large_string()])
def test_ill_formed_utf8_is_refused(target, bad, t):
    column = strings([b"ok", "ünï".encode(), b"a" + bad + b"z", b"later" + bad], t=t)
    with pytest.raises(pa.ArrowInvalid):
        column.validate(full=True)
    with pytest.raises(InvalidDataError, match="ill-formed UTF-8") as info:
        rcfmt.write_table(pa.table({"s": column}), target)
    assert (info.value.column, info.value.row) == ("s", 2)
    _nothing_at(target)


def test_a_value_split_inside_a_character_is_refused(target):
    """Two values that are well-formed together but not each on its own."""
    column = strings([b"ok", "é".encode()[:1], "é".encode()[1:]])
    with pytest.raises(InvalidDataError, match="ill-formed UTF-8") as info:
        rcfmt.write_table(pa.table({"s": column}), target)
    assert info.value.row == 1


def test_binary_values_are_any_bytes(target):
    column = strings([b"\xff", b"\xc0\xaf"], t=pa.binary())
    rcfmt.write_table(pa.table({"b": column}), target)
    assert rcfmt.read_table(target).column("b").to_pylist() == [b"\xff", b"\xc0\xaf"]


def test_string_views_and_dictionaries_are_checked_as_stored(target):
    view = strings([b"fine", b"bad \xff"]).cast(pa.string_view())
    with pytest.raises(InvalidDataError, match="ill-formed UTF-8") as info:
        rcfmt.write_table(pa.table({"v": view}), target)
    assert (info.value.column, info.value.row) == ("v", 1)
    codes = pa.array([0, 0, 1, 0], pa.int32())
    encoded = pa.DictionaryArray.from_arrays(codes, strings([b"fine", b"bad \xff"]))
    with pytest.raises(InvalidDataError, match="ill-formed UTF-8") as info:
        rcfmt.write_table(pa.table({"d": encoded}), target)
    assert (info.value.column, info.value.row) == ("d", 2)
    outside = pa.DictionaryArray.from_buffers(pa.dictionary(pa.int32(), pa.string()), 3,
                                              [None, pa.py_buffer(np.array([0, 1, 7], np.int32))],
                                              dictionary=pa.array(["a", "b"]))
    with pytest.raises(InvalidDataError, match="dictionary") as info:
        rcfmt.write_table(pa.table({"d": outside}), target)
    assert (info.value.column, info.value.row) == ("d", 2)
    _nothing_at(target)


@pytest.mark.parametrize("t", [pa.string(), pa.binary()])
def test_offsets_going_backwards_are_refused(target, t):
    column = pa.Array.from_buffers(t, 3, [None, pa.py_buffer(np.array([0, 4, 2, 8], np.int32)),
                                          pa.py_buffer(b"abcdefgh")])
    with pytest.raises(InvalidDataError, match="offsets go backwards") as info:
        rcfmt.write_table(pa.table({"x": column}), target)
    assert (info.value.column, info.value.row) == ("x", 1)
    lists = pa.Array.from_buffers(pa.list_(pa.int64()), 3, [None, pa.py_buffer(np.array([0, 3, 1, 4], np.int32))],
                                  children=[pa.array([1, 2, 3, 4])])
    with pytest.raises(InvalidDataError, match="list offsets go backwards") as info:
        rcfmt.write_table(pa.table({"l": lists}), target)
    assert (info.value.column, info.value.row) == ("l", 1)
    _nothing_at(target)


def test_the_row_counts_across_chunks(target):
    column = pa.chunked_array([strings([b"a", b"b"]), strings([b"c", b"\xff"]), strings([b"\xfe"])])
    with pytest.raises(InvalidDataError) as info:
        rcfmt.write_table(pa.table({"s": column}), target)
    assert info.value.row == 3


# ---------------------------------------------------------------- nested columns
def _nested_cases():
    bad_strings = strings([b"a", b"b", b"c", b"\xff", b"e"])  # element 3 is bad
    bad_decimals = decimals([1, 2, 3, 4, 99999])  # element 4 is bad
    offsets = pa.array([0, 2, 2, 4, 5], pa.int32())  # lists: [0,1] [] [2,3] [4]
    return [
        pytest.param(pa.ListArray.from_arrays(offsets, bad_strings), "n.item", 2, id="list<string>"),
        pytest.param(pa.LargeListArray.from_arrays(offsets.cast(pa.int64()), bad_decimals), "n.item", 3,
                     id="large_list<decimal>"),
        pytest.param(pa.StructArray.from_arrays([pa.array([1, 2, 3, 4, 5]), bad_decimals], names=["i", "d"]), "n.d",
                     4, id="struct<decimal>"),
        pytest.param(pa.ListArray.from_arrays(offsets, pa.StructArray.from_arrays([bad_strings], names=["s"])),
                     "n.item.s", 2, id="list<struct<string>>"),
        pytest.param(pa.MapArray.from_arrays(offsets, strings([b"k0", b"k1", b"k2", b"k3", b"k4"]), bad_decimals),
                     "n.value", 3, id="map<string,decimal>"),
        pytest.param(pa.MapArray.from_arrays(offsets, bad_strings, pa.array([0, 1, 2, 3, 4])), "n.key", 2,
                     id="map<string(bad),int>"),
        pytest.param(pa.FixedSizeListArray.from_arrays(pa.concat_arrays([bad_strings, strings([b"f"])]), 2),
                     "n.item", 1, id="fixed_size_list<string>"),
        pytest.param(pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()),
                                              pa.ListArray.from_arrays(offsets, bad_strings)), "n.item.item", 1,
                     id="list<list<string>>"),
    ]


@pytest.mark.parametrize("column, stored, row", _nested_cases())
def test_nested_values_are_checked_and_located_by_row(target, column, stored, row):
    table = pa.table({"x": pa.array(range(len(column))), "n": column})
    with pytest.raises(pa.ArrowInvalid):
        table.validate(full=True)
    with pytest.raises(InvalidDataError) as info:
        rcfmt.write_table(table, target)
    assert (info.value.column, info.value.row) == (stored, row)
    _nothing_at(target)


def test_bad_values_left_out_by_their_list_are_not_stored_and_not_refused(target):
    """Elements outside every list's range (a sliced array; a NULL list's own range) are
    not written: nothing to refuse."""
    bad = strings([b"\xff", b"a", b"b", b"\xfe"])
    lists = pa.ListArray.from_arrays(pa.array([0, 1, 3, 4], pa.int32()), bad,
                                     mask=pa.array([True, False, True]))  # [null, [a, b], null]
    rcfmt.write_table(pa.table({"l": lists}), target)
    assert rcfmt.read_table(target).column("l").to_pylist() == [None, ["a", "b"], None]
    sliced = pa.ListArray.from_arrays(pa.array([0, 1, 3, 4], pa.int32()), bad).slice(1, 1)
    rcfmt.write_table(pa.table({"l": sliced}), target)
    assert rcfmt.read_table(target).column("l").to_pylist() == [["a", "b"]]


# ---------------------------------------------------------------- valid Arrow: written, read back
def test_bytes_under_null_strings_are_stored_empty_and_read_back(target):
    """Arrow allows any bytes under a NULL; the writer stored them and the reader refused
    the file. Now the file holds those slots empty."""
    column = strings([b"ok", b"\xff\xfe", b"fine", "ü".encode()[:1]], nulls=(1, 3))
    column.validate(full=True)  # valid Arrow
    table = pa.table({"s": column, "n": pa.ListArray.from_arrays(pa.array([0, 2, 4, 4, 4], pa.int32()), column)})
    for encoding in (None, "plain", "dictionary", "delta_length"):
        rcfmt.write_table(table, target, **({} if encoding is None else {"encoding": {"s": encoding}}))
        back = rcfmt.read_table(target)
        assert back.column("s").to_pylist() == ["ok", None, "fine", None]
        assert back.column("n").to_pylist() == [["ok", None], ["fine", None], [], []]
    with rcfmt.Writer(target, table.schema) as w:  # streaming, and a later batch with clean values
        w.write(table)
        w.write(pa.table({"s": ["x", None], "n": [["y"], None]}))
    assert rcfmt.read_table(target).column("s").to_pylist() == ["ok", None, "fine", None, "x", None]


def test_decimals_beyond_precision_under_nulls_are_not_refused(target):
    column = decimals([110, 12810, 5], nulls=(1,))
    column.validate(full=True)
    rcfmt.write_table(pa.table({"d": column}), target)
    assert rcfmt.read_table(target).column("d").to_pylist() == [decimal.Decimal("1.10"), None,
                                                                 decimal.Decimal("0.05")]
    bad = decimals([12810, 110, 99999], nulls=(1,))  # the bad values are valid ones
    with pytest.raises(InvalidDataError) as info:
        rcfmt.write_table(pa.table({"d": bad}), target)
    assert info.value.row == 0


# ---------------------------------------------------------------- every writer: nothing at the target
def test_write_table_in_batches_names_rows_of_the_whole_table(target):
    values = [b"v%d" % i for i in range(40)]
    values[25] = b"\xff"
    table = pa.table({"s": strings(values)})
    with pytest.raises(InvalidDataError) as info:  # written block by block (a progress bar)
        rcfmt.write_table(table, target, block_rows=10, progress=True)
    assert info.value.row == 25
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=7))
    with pytest.raises(InvalidDataError) as info:  # a stream, batch by batch
        rcfmt.write_table(reader, target, block_rows=10)
    assert info.value.row == 25
    _nothing_at(target)


@pytest.mark.parametrize("curve", ["sort", "zorder"])
def test_clustered_writes_name_rows_of_the_table_given(target, curve):
    values = [b"v%d" % i for i in range(30)]
    values[7] = b"\xff"
    table = pa.table({"k": list(range(30, 0, -1)), "j": [i % 4 for i in range(30)], "s": strings(values)})
    with pytest.raises(InvalidDataError) as info:  # (rows reordered before they are written)
        rcfmt.write_table(table, target, cluster_by=["k", "j"] if curve != "sort" else ["k"], curve=curve)
    assert info.value.row == 7
    _nothing_at(target)


def test_the_streaming_writer_refuses_the_batch_and_leaves_nothing(target):
    good = pa.table({"d": decimals([1, 2, 3])})
    bad = pa.table({"d": decimals([4, 100000])})
    with pytest.raises(InvalidDataError) as info:
        with rcfmt.Writer(target, good.schema, block_rows=2) as w:
            w.write(good)  # (a block already encoded into the temporary file)
            w.write(bad)
    assert (info.value.column, info.value.row) == ("d", 1)  # a row of the batch given
    _nothing_at(target)
    # the refused batch is not part of the file: a caller may go on
    w = rcfmt.Writer(target, good.schema, block_rows=2)
    w.write(good)
    with pytest.raises(InvalidDataError):
        w.write(bad)
    w.write(good)
    w.close()
    assert rcfmt.read_table(target).column("d").to_pylist() == [decimal.Decimal("0.0" + str(i)) for i in (1, 2, 3)] * 2


@pytest.mark.parametrize("partition_by", [None, ["p"]])
def test_write_dataset_refuses_and_commits_nothing(tmp_path, partition_by):
    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"s": ["a", "b"], "p": [1, 2]}), root, partition_by=partition_by)
    before = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())
    bad = pa.table({"s": strings([b"x", b"y", b"\xff", b"z"]), "p": [2, 1, 2, 1]})
    with pytest.raises(InvalidDataError) as info:
        rcfmt.write_dataset(bad, root, partition_by=partition_by)
    assert (info.value.column, info.value.row) == ("s", 2)  # a row of the input, not of a partition's file
    assert sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file()) == before
    assert rcfmt.dataset(root).to_table().num_rows == 2
    bad_partition = pa.table({"s": ["x", "y"], "p": strings([b"ok", b"\xff"])})  # partition values too
    with pytest.raises(InvalidDataError) as info:
        rcfmt.write_dataset(bad_partition, tmp_path / "ds2", partition_by=["p"])
    assert (info.value.column, info.value.row) == ("p", 1)
    batches = [pa.table({"s": ["a"] * 3, "p": [1] * 3}), bad]  # an iterable: rows counted across its tables
    with pytest.raises(InvalidDataError) as info:
        rcfmt.write_dataset(iter(batches), root, partition_by=partition_by)
    assert info.value.row == 5
    assert rcfmt.dataset(root).to_table().num_rows == 2


# ---------------------------------------------------------------- schemas a reader refuses
@pytest.mark.parametrize("t, match", [
    (pa.list_(pa.list_(pa.int8(), 2), 2**20 + 1), "fixed_size_list of size 1048577"),  # (a struct without fields
    # is stored: tests/schema/test_last_shapes.py)
    (pa.list_(pa.int8(), 2**20 + 1), "fixed_size_list of size 1048577"),
])
def test_nested_shapes_a_reader_refuses_are_schema_errors(target, t, match):
    with pytest.raises(rcfmt.SchemaError, match=match):
        rcfmt.Writer(target, pa.schema([pa.field("n", t)]))
    _nothing_at(target)
