"""list_view and large_list_view columns (Arrow's offsets + sizes lists) are written and
read back as list and large_list (README, Types). pyarrow's own cast from list_view to
list builds arrays one offset short, which made ``write_table`` raise
``pyarrow.ArrowInvalid``; rcfmt converts them itself. Views here come out of order,
overlap, leave values out, are NULL with any offset and size, and are sliced."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rcfmt
from rcfmt import InvalidDataError


def views(offsets, sizes, values, *, large=False, nulls=()) -> pa.Array:
    """A list view array with exactly these offsets and sizes (NULL at ``nulls``)."""
    t = (pa.large_list_view if large else pa.list_view)(values.type)
    width = np.int64 if large else np.int32
    valid = None
    if nulls:
        bits = np.ones(len(offsets), bool)
        bits[list(nulls)] = False
        valid = pa.py_buffer(np.packbits(bits, bitorder="little"))
    return pa.Array.from_buffers(t, len(offsets), [valid, pa.py_buffer(np.asarray(offsets, width)),
                                                   pa.py_buffer(np.asarray(sizes, width))], len(nulls),
                                 children=[values])


def roundtrip(tmp_path, table, **options) -> pa.Table:
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, **options)
    return rcfmt.read_table(path)


VALUES = pa.array([10, 11, 12, 13, 14, 15, 16, 17])
#: out of order, overlapping, empty, a NULL with a nonsense offset and size, values left out
OFFSETS = [5, 0, 2, 99, 1, 6, 0]
SIZES = [3, 4, 0, 123, 3, 2, 8]
NULLS = (3,)
EXPECTED = [[15, 16, 17], [10, 11, 12, 13], [], None, [11, 12, 13], [16, 17], [10, 11, 12, 13, 14, 15, 16, 17]]


@pytest.mark.parametrize("large", [False, True])
def test_list_views_are_written_and_read_back_as_lists(tmp_path, large):
    column = views(OFFSETS, SIZES, VALUES, large=large, nulls=NULLS)
    assert column.to_pylist() == EXPECTED
    back = roundtrip(tmp_path, pa.table({"l": column}))
    assert back.schema.field("l").type == (pa.large_list if large else pa.list_)(pa.int64())
    assert back.column("l").to_pylist() == EXPECTED
    back.validate(full=True)


@pytest.mark.parametrize("start, stop", [(1, 5), (3, 4), (2, 7), (0, 0)])
def test_sliced_list_views(tmp_path, start, stop):
    column = views(OFFSETS, SIZES, VALUES, nulls=NULLS).slice(start, stop - start)
    back = roundtrip(tmp_path, pa.table({"l": column}))
    assert back.column("l").to_pylist() == EXPECTED[start:stop]


def test_views_in_order_back_to_back_are_a_slice_of_their_values(tmp_path):
    column = views([2, 4, 4, 7], [2, 0, 3, 1], VALUES)  # (no gather needed)
    assert roundtrip(tmp_path, pa.table({"l": column})).column("l").to_pylist() == [[12, 13], [], [14, 15, 16],
                                                                                    [17]]


def test_list_views_inside_and_around_other_types(tmp_path):
    strings = pa.array(["a", "bb", None, "dddd", "é"])
    inner = views([3, 0, 1], [2, 2, 3], strings, nulls=())  # [[d, é], [a, bb], [bb, None, d]]
    table = pa.table({
        "strings": views([4, 0, 2], [1, 3, 0], strings, nulls=(2,)),
        "in_struct": pa.StructArray.from_arrays([views([1, 0, 0], [2, 1, 0], VALUES)], names=["v"],
                                                mask=pa.array([False, True, False])),
        "of_structs": views([1, 0, 1], [2, 3, 1], pa.StructArray.from_arrays([pa.array([1, 2, 3]),
                                                                               pa.array(["x", "y", "z"])],
                                                                              names=["i", "s"])),
        "of_views": views([1, 0, 2], [2, 1, 1], inner),
        "in_list": pa.ListArray.from_arrays(pa.array([0, 1, 1, 3], pa.int32()), inner),
        "in_map": pa.MapArray.from_arrays(pa.array([0, 2, 2, 3], pa.int32()), pa.array(["k", "l", "m"]), inner),
    })
    expected = table.to_pylist()
    back = roundtrip(tmp_path, table)
    assert back.to_pylist() == expected
    assert back.schema.field("of_views").type == pa.list_(pa.list_(pa.string()))
    assert back.schema.field("in_struct").type == pa.struct([pa.field("v", pa.list_(pa.int64()))])
    # and filters on a list of list views
    path = tmp_path / "f.rcfmt"
    rcfmt.write_table(table, path)
    hit = rcfmt.read_table(path, columns=["strings"], filter=rcfmt.list_contains(rcfmt.col("strings"), "é"))
    assert hit.column("strings").to_pylist() == [["é"]]


def test_chunked_streamed_and_dataset_writes(tmp_path):
    column = views(OFFSETS, SIZES, VALUES, nulls=NULLS)
    table = pa.table({"l": pa.chunked_array([column.slice(0, 3), column.slice(3)]), "k": list(range(7))})
    assert roundtrip(tmp_path, table).column("l").to_pylist() == EXPECTED
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=2))
    assert roundtrip(tmp_path, reader).column("l").to_pylist() == EXPECTED
    path = tmp_path / "w.rcfmt"
    with rcfmt.Writer(path, table.schema, block_rows=3) as w:
        for batch in table.to_batches(max_chunksize=4):
            w.write(batch)
    assert rcfmt.read_table(path).column("l").to_pylist() == EXPECTED
    root = tmp_path / "ds"
    rcfmt.write_dataset(table.append_column("p", pa.array([k % 2 for k in range(7)])), root, partition_by=["p"])
    back = rcfmt.dataset(root).to_table().sort_by("k")
    assert back.column("l").to_pylist() == EXPECTED
    rcfmt.write_dataset(table.append_column("p", pa.array([1] * 7)), root)  # an append of list views again
    assert rcfmt.dataset(root).to_table().num_rows == 14


def test_views_outside_their_values_are_invalid_data_not_arrow_errors(tmp_path):
    path = tmp_path / "t.rcfmt"
    for offsets, sizes in (([0, 6], [2, 5]), ([0, 1], [2, -1]), ([-1, 0], [2, 1])):
        column = views(offsets, sizes, VALUES)
        with pytest.raises(InvalidDataError, match="outside its 8 values") as info:
            rcfmt.write_table(pa.table({"l": column}), path)
        assert info.value.column == "l" and info.value.row == (0 if offsets[0] < 0 else 1)
    assert not path.exists()


def test_views_beyond_32_bit_offsets_need_large_list_view(tmp_path):
    n, width = 2**15 + 1, 2**16  # every view holds all the values: 2^31 + 2^16 in all
    column = views(np.zeros(n, np.int32), np.full(n, width, np.int32), pa.array(np.zeros(width, np.int8)))
    with pytest.raises(InvalidDataError, match="beyond a list's 32-bit offsets; write them as large_list_view"):
        rcfmt.write_table(pa.table({"l": column}), tmp_path / "t.rcfmt")


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_layout_of_views_reads_back_as_its_lists(tmp_path_factory, data):
    lists = data.draw(st.lists(st.one_of(st.none(), st.lists(st.integers(-5, 5), max_size=4)), max_size=12))
    # lay the values out in a random order, with junk between, and let equal lists share one view
    order = data.draw(st.permutations(range(len(lists))))
    values, where = [], {}
    for i in order:
        values += data.draw(st.lists(st.integers(100, 110), max_size=2))  # values no view holds
        if lists[i] is not None and tuple(lists[i]) not in where:
            where[tuple(lists[i])] = len(values)
            values += lists[i]
    offsets = [where.get(tuple(v), 0) if v is not None else data.draw(st.integers(0, 50)) for v in lists]
    sizes = [len(v) if v is not None else data.draw(st.integers(0, 50)) for v in lists]
    large = data.draw(st.booleans())
    column = views(offsets, sizes, pa.array(values, pa.int64()), large=large,
                   nulls=[i for i, v in enumerate(lists) if v is None])
    start = data.draw(st.integers(0, len(lists)))
    stop = data.draw(st.integers(start, len(lists)))
    back = roundtrip(tmp_path_factory.mktemp("v"), pa.table({"l": column.slice(start, stop - start)}))
    assert back.column("l").to_pylist() == lists[start:stop]
