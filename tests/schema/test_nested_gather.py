"""Rows of nested fixed_size_list columns survive every gather rcfmt does on user data.

pyarrow 26's ``take``/``filter`` read a *sliced* fixed_size_list of fixed_size_lists of
primitives at the wrong place (values from elsewhere, no error). rcfmt gathers user
rows when it clusters a file, partitions a dataset, optimizes one and filters a
residual: each path is checked here on sliced input against plain Python."""
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import rcfmt
from rcfmt.schema.arrow_io import filter_rows, take
from tests import strategies as S

FSL2 = pa.list_(pa.list_(pa.int64(), 2), 2)
INNER = pa.struct([("p", FSL2), ("q", pa.int32())])
SETTINGS = settings(max_examples=S.examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _table(keys: list[int], offset: int) -> pa.Table:
    """A table sliced at ``offset`` whose nested values name their own row."""
    n = len(keys) + offset
    rows = list(range(-offset, len(keys)))
    padded = [0] * offset + keys
    table = pa.table({
        "k": pa.array(padded, pa.int64()),
        "g": pa.array([k % 3 for k in padded], pa.int64()),
        "f": pa.array([[[r, r + 1], [k, -r]] for r, k in zip(rows, padded)], FSL2),
        "s": pa.array([{"p": [[k, r], [r, k]], "q": r} for r, k in zip(rows, padded)], INNER),
    })
    assert table.num_rows == n
    return table.slice(offset)


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(zip(*(table[c].to_pylist() for c in ("k", "f", "s"))), key=repr)


@pytest.mark.parametrize("kind", ["array", "chunked", "batch", "table"])
def test_take_and_filter_of_a_sliced_nested_fixed_size_list(kind):
    table = _table([5, 1, 4, 2, 3], offset=3)
    data = {"array": table["f"].chunk(0), "chunked": table["f"], "batch": table.to_batches()[0],
            "table": table}[kind]
    expected = table["f"].to_pylist()
    got = take(data, pa.array([4, 0, 2]))
    got_f = got if kind in ("array", "chunked") else got["f"] if kind == "table" else got.column(2)
    assert got_f.to_pylist() == [expected[4], expected[0], expected[2]]
    kept = filter_rows(data, pa.array([True, False, False, True, True]))
    kept_f = kept if kind in ("array", "chunked") else kept["f"] if kind == "table" else kept.column(2)
    assert kept_f.to_pylist() == [expected[0], expected[3], expected[4]]


@SETTINGS
@given(keys=st.lists(st.integers(-50, 50), min_size=1, max_size=30), offset=st.integers(1, 7),
       curve=st.sampled_from(["sort", "zorder"]))
def test_clustered_write_keeps_nested_rows(tmp_path_factory, keys, offset, curve):
    table = _table(keys, offset)
    path = tmp_path_factory.mktemp("c") / "t.rcfmt"
    rcfmt.write_table(table, path, cluster_by=["k", "g"] if curve == "zorder" else ["k"], curve=curve,
                      block_rows=4)
    got = rcfmt.read_table(path)
    got.validate(full=True)
    assert _rows(got) == _rows(table)
    if curve == "sort":
        assert got["k"].to_pylist() == sorted(keys)


@SETTINGS
@given(keys=st.lists(st.integers(-50, 50), min_size=1, max_size=30), offset=st.integers(1, 7))
def test_partitioned_and_optimized_dataset_keeps_nested_rows(tmp_path_factory, keys, offset):
    table = _table(keys, offset)
    root = tmp_path_factory.mktemp("d") / "ds"
    rcfmt.write_dataset(table, root, partition_by=["g"])
    rcfmt.write_dataset(_table(keys[::-1], offset + 1), root)
    expected = _rows(pa.concat_tables([table, _table(keys[::-1], offset + 1)]))
    ds = rcfmt.dataset(root)
    assert _rows(ds.to_table(columns=["k", "f", "s"])) == expected
    ds.optimize(cluster_by=["k"], curve="sort")
    assert _rows(rcfmt.dataset(root).to_table(columns=["k", "f", "s"])) == expected


@pytest.mark.parametrize("kind", ["array", "chunked", "batch", "table"])
def test_take_and_filter_of_views_anywhere_in_a_type(kind):
    """Arrow has no take or filter kernel for string and binary views: rcfmt's gathers
    take them in their offset form and give back the views' own type."""
    keys = list(range(6))
    columns = {
        "v": pa.array([f"v{k}" if k != 2 else None for k in keys], pa.string_view()),
        "st": pa.array([{"a": b"%d" % k} for k in keys], pa.struct([("a", pa.binary_view())])),
        "l": pa.array([[f"l{k}"] * (k % 3) for k in keys], pa.list_(pa.string_view())),
        "d": pa.array([f"d{k % 2}" for k in keys], pa.string_view()).dictionary_encode(),
    }
    table = pa.table(columns)
    data = {"array": columns["st"], "chunked": pa.chunked_array([columns["l"].slice(0, 3), columns["l"].slice(3)]),
            "batch": table.to_batches()[0], "table": table}[kind]
    picked, mask = [4, 0, 2, 2], [k % 2 == 1 for k in keys]
    took, kept = take(data, pa.array(picked)), filter_rows(data, pa.array(mask))
    assert took.type == data.type if kind in ("array", "chunked") else took.schema == data.schema
    listed = data.to_pylist()
    assert took.to_pylist() == [listed[i] for i in picked]
    assert kept.to_pylist() == [row for row, m in zip(listed, mask) if m]
