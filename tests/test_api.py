"""Public API contracts: errors come from rcfmt's hierarchy with clear messages, bad
arguments fail before anything is written, failed writes leave no trace."""
from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
import strategies as S
from rcfmt import (ChecksumError, CorruptFileError, FilterError, InvalidOptionError, RcfmtError, SchemaError,
                   UnsupportedError)
from rcfmt.errors import UnknownOptionError
from rcfmt.storage import DirectoryError

TABLE = pa.table({"a": pa.array([1, 2, 3], pa.int64()), "s": ["x", None, "z"], "b": [True, False, True]})


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.fixture
def target(tmp_path):
    """A target path in an otherwise empty directory."""
    d = tmp_path / "out"
    d.mkdir()
    return d / "t.rcfmt"


# ---------------------------------------------------------------------------- hierarchy
def test_error_hierarchy():
    for exc in (CorruptFileError, ChecksumError, UnsupportedError, SchemaError, InvalidOptionError, FilterError):
        assert issubclass(exc, RcfmtError)
    assert issubclass(ChecksumError, CorruptFileError)
    assert issubclass(SchemaError, ValueError) and issubclass(InvalidOptionError, ValueError)
    e = CorruptFileError("bad thing", path="f.rcfmt", column="c", block=2, page=3, offset=99)
    assert str(e) == "bad thing (file=f.rcfmt, column='c', block=2, page=3, offset=99)"
    e2 = CorruptFileError("x", page=1).with_context(path="p", page=7, block=0)
    assert (e2.path, e2.page, e2.block) == ("p", 1, 0)  # existing fields are kept
    assert type(ChecksumError("y").with_context(path="p")) is ChecksumError


def test_public_names():
    for name in rcfmt.__all__:
        assert getattr(rcfmt, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rcfmt.nope  # noqa: B018


# ---------------------------------------------------------------------------- bad options
BAD_OPTIONS = [
    ({"block_rows": 0}, InvalidOptionError, "block_rows"),
    ({"block_rows": -5}, InvalidOptionError, "block_rows"),
    ({"block_rows": 2.5}, InvalidOptionError, "block_rows"),
    ({"block_rows": True}, InvalidOptionError, "block_rows"),
    ({"block_rows": "10"}, InvalidOptionError, "block_rows"),
    ({"page_size": -1}, InvalidOptionError, "page_size"),
    ({"page_size": 63}, InvalidOptionError, "page_size"),
    ({"page_size": 1 << 31}, InvalidOptionError, "page_size"),
    ({"page_rows": 0}, InvalidOptionError, "page_rows"),
    ({"compression": "snappy"}, InvalidOptionError, "snappy"),
    ({"compression": None}, InvalidOptionError, "compression"),
    ({"compression": "lz4", "compression_level": 3}, InvalidOptionError, "compression_level"),
    ({"compression": "zstd", "compression_level": 99}, InvalidOptionError, "compression_level"),
    ({"encoding": "nope"}, InvalidOptionError, "nope"),
    ({"encoding": {"a": "nope"}}, InvalidOptionError, "nope"),
    ({"encoding": 3}, InvalidOptionError, "encoding"),
    ({"encoding": {"zz": "plain"}}, SchemaError, "zz"),
    ({"encoding": {"b": "dictionary"}}, InvalidOptionError, "'b'"),  # bool cannot be a dictionary
    ({"encoding": {"s": "rle"}}, InvalidOptionError, "'s'"),  # strings cannot be RLE
    ({"encoding": "rle"}, InvalidOptionError, "'s'"),
    ({"dictionary": "yes"}, InvalidOptionError, "dictionary"),
    ({"stats_truncate": 0}, InvalidOptionError, "stats_truncate"),
    ({"stats_truncate": 256}, InvalidOptionError, "stats_truncate"),
    ({"bloom_filter_columns": "a"}, InvalidOptionError, "bloom_filter_columns"),
    ({"bloom_filter_columns": [1]}, InvalidOptionError, "bloom_filter_columns"),
    ({"bloom_filter_columns": ["zz"]}, SchemaError, "zz"),
    ({"bloom_filter_fpp": 1.5}, InvalidOptionError, "bloom_filter_fpp"),
    ({"bloom_filter_fpp": 0.0}, InvalidOptionError, "bloom_filter_fpp"),
    ({"use_threads": "yes"}, InvalidOptionError, "use_threads"),
    ({"metadata": {"k": 3}}, InvalidOptionError, "metadata"),
    ({"metadata": [("k", "v")]}, InvalidOptionError, "metadata"),
]


@pytest.mark.parametrize("options,exc,match", BAD_OPTIONS, ids=[repr(o[0]) for o in BAD_OPTIONS])
@pytest.mark.parametrize("api", ["write_table", "Writer"])
def test_bad_options_raise_before_any_file_is_created(target, options, exc, match, api):
    with pytest.raises(exc, match=match):
        if api == "write_table":
            rcfmt.write_table(TABLE, target, **options)
        else:
            rcfmt.Writer(target, TABLE.schema, **options)
    assert listing(target.parent) == []  # neither the target nor a temporary file


def test_non_utf8_metadata_key_is_an_option_error(target):
    with pytest.raises(InvalidOptionError):
        rcfmt.write_table(TABLE, target, metadata={b"\xff": b"v"})
    assert listing(target.parent) == []
    with pytest.raises(rcfmt.SchemaError, match="the schema's metadata keys must be UTF-8"):  # the data's own
        rcfmt.write_table(TABLE.replace_schema_metadata({b"\xff": b"v"}), target)
    assert listing(target.parent) == []


def test_unknown_keyword_is_a_type_error(target):
    with pytest.raises(UnknownOptionError, match="bogus") as info:  # an InvalidOptionError and a TypeError
        rcfmt.write_table(TABLE, target, bogus=1)
    assert isinstance(info.value, TypeError)
    assert listing(target.parent) == []


def test_missing_directory(tmp_path):
    with pytest.raises(InvalidOptionError, match="does not exist"):
        rcfmt.write_table(TABLE, tmp_path / "no" / "such" / "t.rcfmt")
    assert listing(tmp_path) == []


# ---------------------------------------------------------------------------- schemas
@pytest.mark.parametrize("t", S.UNSUPPORTED_TYPES, ids=lambda t: str(t)[:60])
def test_unsupported_types_raise_schema_error(tmp_path, t):
    """Every type rcfmt cannot store (a short fixed list: each checked, none sampled): run_end_encoded
    of run_end_encoded values, and types beyond the bounds a reader enforces."""
    d = tmp_path
    schema = pa.schema([pa.field("ok", pa.int8()), pa.field("bad", t)])
    with pytest.raises(SchemaError, match="'bad'"):
        rcfmt.Writer(d / "t.rcfmt", schema)
    assert listing(d) == []
    if not pa.types.is_dictionary(t):
        try:
            table = schema.empty_table()
        except pa.ArrowNotImplementedError:  # (pyarrow builds no empty union column)
            return
        with pytest.raises(SchemaError, match="'bad'"):
            rcfmt.write_table(table, d / "t.rcfmt")
        assert listing(d) == []


@pytest.mark.parametrize("data", [[1, 2], None, "text", np.arange(3)], ids=["list", "None", "str", "ndarray"])
def test_unsupported_input_objects(target, data):
    with pytest.raises(SchemaError, match="expected a pyarrow Table"):
        rcfmt.write_table(data, target)
    assert listing(target.parent) == []


def test_dict_that_is_not_a_table(target):
    with pytest.raises(SchemaError, match="cannot convert dict"):
        rcfmt.write_table({"a": [1, "x"]}, target)
    assert listing(target.parent) == []


def test_writer_requires_a_schema(target):
    with pytest.raises(SchemaError, match="pyarrow.Schema"):
        rcfmt.Writer(target, {"a": pa.int8()})
    assert listing(target.parent) == []


@pytest.mark.parametrize("bad,match", [
    (pa.table({"b": [1], "a": [2]}), "columns"),  # names / order differ
    (pa.table({"a": [1]}), "columns"),  # missing column
    (pa.table({"a": pa.array([1], pa.int32()), "s": ["x"]}), "'a'"),  # type differs
    (pa.table({"a": [None], "s": ["x"]}, schema=pa.schema([("a", pa.int64()), ("s", pa.string())])), "nullable"),
])
def test_write_schema_mismatch(target, bad, match):
    schema = pa.schema([pa.field("a", pa.int64(), nullable=False), pa.field("s", pa.string())])
    w = rcfmt.Writer(target, schema)
    w.write(pa.table({"a": [7], "s": ["ok"]}, schema=schema))
    with pytest.raises(SchemaError, match=match):
        w.write(bad)
    # a rejected write changes nothing: the writer still works and holds the first rows
    w.close()
    assert rcfmt.read_table(target).to_pydict() == {"a": [7], "s": ["ok"]}
    assert listing(target.parent) == [target.name]


@pytest.mark.parametrize("p,s", [(5, 7), (5, -7)])
def test_decimal_scale_outside_precision_is_rejected_or_round_trips(target, p, s):
    t = pa.decimal128(p, s)
    arr = pa.Array.from_buffers(t, 1, [None, pa.py_buffer((123).to_bytes(16, "little", signed=True))])
    table = pa.table({"d": arr})
    try:
        rcfmt.write_table(table, target)
    except SchemaError:
        assert listing(target.parent) == []
        return
    S.assert_tables_identical(rcfmt.read_table(target), table)


# ---------------------------------------------------------------------------- failed writes leave no trace
def test_exception_inside_writer_block_leaves_nothing(target):
    with pytest.raises(RuntimeError, match="boom"):
        with rcfmt.Writer(target, TABLE.schema, block_rows=1) as w:
            w.write(TABLE)  # blocks already written to the temporary file
            raise RuntimeError("boom")
    assert listing(target.parent) == []


def test_second_write_with_wrong_schema_inside_with_leaves_nothing(target):
    with pytest.raises(SchemaError):
        with rcfmt.Writer(target, TABLE.schema, block_rows=1) as w:
            w.write(TABLE)
            w.write(pa.table({"x": [1]}))
    assert listing(target.parent) == []


def test_failed_write_keeps_existing_file(target):
    rcfmt.write_table(TABLE, target)
    before = target.read_bytes()
    with pytest.raises(RuntimeError):
        with rcfmt.Writer(target, TABLE.schema) as w:
            w.write(TABLE.slice(0, 1))
            raise RuntimeError("boom")
    with pytest.raises(InvalidOptionError):
        rcfmt.write_table(TABLE, target, compression="snappy")
    with pytest.raises(SchemaError):  # (a fixed_size_list beyond the bound a reader enforces)
        rcfmt.write_table(pa.table({"r": pa.array([], pa.list_(pa.int8(), 2**20 + 1))}), target)
    assert target.read_bytes() == before
    assert listing(target.parent) == [target.name]
    S.assert_tables_identical(rcfmt.read_table(target), TABLE)


def test_successful_write_replaces_existing_file(target):
    target.write_bytes(b"old content")
    rcfmt.write_table(TABLE, target)
    S.assert_tables_identical(rcfmt.read_table(target), TABLE)
    assert listing(target.parent) == [target.name]


def test_abort_and_garbage_collection_leave_nothing(target):
    w = rcfmt.Writer(target, TABLE.schema, block_rows=1)
    w.write(TABLE)
    assert len(listing(target.parent)) == 1  # the temporary file, not the target
    assert target.name not in listing(target.parent)
    w.abort()
    assert listing(target.parent) == []
    w2 = rcfmt.Writer(target, TABLE.schema)
    w2.write(TABLE)
    del w2
    gc.collect()
    assert listing(target.parent) == []


def test_writing_onto_a_directory_fails_cleanly(tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    (d / "keep").write_text("x")
    with pytest.raises(IsADirectoryError):
        rcfmt.write_table(TABLE, d)
    assert listing(d) == ["keep"]
    assert listing(tmp_path) == ["dir"]


def test_writing_onto_a_directory_is_the_directory_error_an_open_gives(tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    with pytest.raises(DirectoryError):
        rcfmt.open(d)
    with pytest.raises(DirectoryError):
        rcfmt.write_table(TABLE, d)


def test_writer_context_manager_and_closed_writer(target):
    with rcfmt.Writer(target, TABLE.schema) as w:
        w.write_batch(TABLE.to_batches()[0])
    assert listing(target.parent) == [target.name]
    w.close()  # idempotent
    for call in (lambda: w.write(TABLE), w.flush_block):
        with pytest.raises(RcfmtError, match="writer is closed") as info:
            call()
        assert type(info.value) is RcfmtError  # a misuse, not damage or a failed store
    S.assert_tables_identical(rcfmt.read_table(target), TABLE)


# ---------------------------------------------------------------------------- reading: bad arguments
@pytest.fixture
def written(tmp_path):
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(TABLE, path, block_rows=2)
    return path


def test_reader_context_manager_closes(written):
    with rcfmt.open(written) as f:
        assert f.num_blocks == 2 and "2 blocks" in repr(f)
    with pytest.raises(RcfmtError, match="file is closed") as info:
        f.read()
    assert type(info.value) is RcfmtError  # a misuse, not damage or a failed store
    f.close()  # idempotent


def test_unknown_columns_are_schema_errors(written):
    with rcfmt.open(written) as f:
        with pytest.raises(SchemaError, match="'zz'"):
            f.read(columns=["a", "zz"])
        with pytest.raises(SchemaError, match="'zz'"):
            f.read_block(0, columns=["zz"])
        with pytest.raises(SchemaError, match="'zz'"):
            list(f.iter_batches(columns=["zz"]))
        with pytest.raises(SchemaError, match="'zz'"):
            f.block_stats("zz")
        with pytest.raises(SchemaError):
            f.read(columns=[["a"]])
        with pytest.raises(InvalidOptionError, match="list of column names"):
            f.read(columns="a")
    with pytest.raises(SchemaError, match="'zz'"):
        rcfmt.read_table(written, columns=["zz"])


def test_a_column_named_twice_is_read_once(tmp_path):
    """Each field once, in the order of its first mention, whatever else the file holds
    (a struct column beside made flat files repeat it) and for datasets alike."""
    flat = pa.table({"a": [1, 2], "f": [1.0, 2.0]})
    nested = flat.append_column("st", pa.array([{"x": 1}, {"x": 2}]))
    for name, t in (("flat", flat), ("nested", nested)):
        rcfmt.write_table(t, tmp_path / f"{name}.rcfmt")
        with rcfmt.open(tmp_path / f"{name}.rcfmt") as f:
            assert f.read(columns=["f", "a", "f"]).column_names == ["f", "a"]
            assert f.take([1], columns=["a", "a"]).equals(flat.select(["a"]).slice(1))
    ds = rcfmt.write_dataset(flat, tmp_path / "ds")
    assert ds.read(columns=["f", "a", "f"]).column_names == ["f", "a"]
    with pytest.raises(SchemaError, match=r"unknown column 'zz'; the columns are \['a', 'f'\]"):
        ds.read(columns=["zz"])  # (a dataset's, not "the file has")


@pytest.mark.parametrize("index", [2, -3, 100, 1.0, "0", True, None])
def test_read_block_out_of_range(written, index):
    with rcfmt.open(written) as f:
        with pytest.raises(InvalidOptionError, match="block index"):
            f.read_block(index)


@pytest.mark.parametrize("size", [0, -1, 2.0, True])
def test_iter_batches_bad_batch_size(written, size):
    with rcfmt.open(written) as f:
        with pytest.raises(InvalidOptionError, match="batch_size"):
            list(f.iter_batches(size))


@pytest.mark.parametrize("call", [
    lambda p: rcfmt.read_table(p, use_threads="no"),
    lambda p: rcfmt.read_table(p, verify_checksums=None),
    lambda p: rcfmt.open(p, verify_checksums=[1]),
    lambda p: rcfmt.open(p).scan(use_bloom="no"),
    lambda p: rcfmt.open(p).scan(use_page_index=None),
    lambda p: rcfmt.open(p).scan(use_bitmap_index=1.5),
    lambda p: list(rcfmt.open(p).iter_batches(use_threads="yes")),
])
def test_read_flags_are_true_or_false(written, call):
    """An on-off flag is a bool, as the writer's are: 'no' is truthy, and a read that
    took it verified nothing it was asked to, or threaded what it was told not to."""
    with pytest.raises(InvalidOptionError, match="must be True or False"):
        call(written)


def test_numpy_bools_are_flags_and_iterators_are_lists_of_names(tmp_path, written):
    with rcfmt.open(written, verify_checksums=np.True_) as f:
        assert f.scan(use_bloom=np.False_, use_page_index=np.True_).read().num_rows == 3
    assert rcfmt.read_table(written, use_threads=np.False_).num_rows == 3
    rcfmt.write_table(TABLE, tmp_path / "b.rcfmt", bloom_filter_columns=(c for c in ["s"]))
    with rcfmt.open(tmp_path / "b.rcfmt") as f:  # (a generator was read up by a first pass: no filter)
        assert [int(f.footer.chunks[c][0]["bloom_length"]) > 0 for c in range(3)] == [False, True, False]
    ds = rcfmt.write_dataset(TABLE, tmp_path / "ds", cluster_by=iter(["a"]))  # (was refused: read up)
    ds = ds.evolve(add=pa.schema([("c", pa.int32())]))  # (a schema is a list of fields)
    assert ds.schema.names == ["a", "s", "b", "c"]


@pytest.mark.parametrize("blocks", [("1", 2), (0, b"1"), (1.9, 2.0), (True, 2), (0, float("inf")), (0,), 3])
def test_scan_blocks_are_two_block_numbers(written, blocks):
    with rcfmt.open(written) as f:
        with pytest.raises(InvalidOptionError, match="blocks must be"):
            f.scan(blocks=blocks)
        assert f.scan(blocks=(np.int64(1), 2)).read().num_rows == 1
        with pytest.raises(SchemaError):
            f.block_stats(True)  # (no column position)


@pytest.mark.parametrize("options", [dict(bloom_filter_columns=1), dict(bloom_filter_columns=True),
                                     dict(cluster_by=1), dict(cluster_by=1.5), dict(cluster_by=b"a"),
                                     dict(cluster_by=[]), dict(metadata=0), dict(metadata="")])
def test_name_list_options_given_a_number_are_option_errors(target, options):
    with pytest.raises(InvalidOptionError):
        rcfmt.write_table(TABLE, target, **options)
    assert listing(target.parent) == []


def test_dataset_options_are_checked(tmp_path):
    root = tmp_path / "ds"
    for options in (dict(partition_by=1), dict(partition_by=True), dict(cluster_by=5), dict(curve="zorderr"),
                    dict(mapping="nope"), dict(cluster_by=[], curve=42)):
        with pytest.raises(InvalidOptionError):
            rcfmt.write_dataset(TABLE, root, **options)
        assert not root.exists(), options
    ds = rcfmt.write_dataset(TABLE, root, target_file_rows=2**63)  # (as many rows as there are in a file)
    assert len(ds.files) == 1
    for call in (lambda: ds.optimize(cluster_by=1), lambda: ds.optimize(curve="zorderr"),
                 lambda: ds.optimize(mapping=None), lambda: ds.optimize(force="no"),
                 lambda: ds.merge(TABLE, on=1), lambda: ds.evolve(add=1), lambda: ds.evolve(drop=1.5),
                 lambda: ds.vacuum(dry_run="no"), lambda: ds.vacuum(retention_seconds="60"),
                 lambda: ds.read(use_threads="no"), lambda: rcfmt.dataset(root, version=True)):
        with pytest.raises(InvalidOptionError):
            call()
    assert rcfmt.dataset(root).version == ds.version and len(listing(root)) == 2
    with pytest.raises(InvalidOptionError, match=r"has no version 7; versions: \[1\]"):
        rcfmt.dataset(root, version=7)


# ---------------------------------------------------------------------------- reading: not rcfmt
def test_empty_file(tmp_path):
    p = tmp_path / "empty.rcfmt"
    p.write_bytes(b"")
    with pytest.raises(CorruptFileError, match="too short") as info:
        rcfmt.open(p)
    assert info.value.path == str(p)


@pytest.mark.parametrize("content,match", [
    (b"PAR1" + b"\0" * 100 + b"PAR1", "bad magic at the start"),
    (b"hello world, not rcfmt at all", "bad magic at the start"),
    (b"RCFM\1\0\0\0" + b"\0" * 40, "bad magic at the end"),
    (b"RCFM\0\0\0\0" + b"\0" * 40, "invalid format version 0"),
    (b"RCFM\1\0\0\0RCFM", "too short"),
    (np.random.default_rng(0).bytes(1000), "bad magic at the start"),
], ids=["parquet-like", "text", "rcfmt-header-only", "version-0", "short", "random"])
def test_not_an_rcfmt_file(tmp_path, content, match):
    p = tmp_path / "x.bin"
    p.write_bytes(content)
    with pytest.raises(CorruptFileError, match=match) as info:
        rcfmt.open(p)
    assert info.value.path == str(p)


def test_parquet_file_is_not_rcfmt(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    p = tmp_path / "x.parquet"
    pq.write_table(TABLE, p)
    with pytest.raises(CorruptFileError, match="not an rcfmt file"):
        rcfmt.read_table(p)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        rcfmt.open(tmp_path / "nope.rcfmt")


def test_directory_path(tmp_path):
    with pytest.raises(DirectoryError, match="is a directory; use rcfmt.dataset") as info:
        rcfmt.open(tmp_path)
    assert isinstance(info.value, RcfmtError) and isinstance(info.value, IsADirectoryError)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc (Linux), where no file can be made")
def test_a_place_no_file_can_be_written_is_named_by_the_target():
    """The writer's temporary name is its own: the error names the target asked for."""
    with pytest.raises(FileNotFoundError, match=r"cannot write '/proc/x\.rcfmt' \(No such file"):
        rcfmt.write_table(pa.table({"a": [1]}), "/proc/x.rcfmt")


def test_scan_a_range_of_blocks(tmp_path):
    t = pa.table({"x": np.arange(1000), "y": np.arange(1000) % 7})
    path = tmp_path / "b.rcfmt"
    rcfmt.write_table(t, path, block_rows=100)
    with rcfmt.open(path) as f:
        scan = f.scan(blocks=(2, 5))
        assert scan.read()["x"].to_pylist() == list(range(200, 500))
        assert (scan.stats.blocks_total, scan.stats.rows_total) == (3, 300)
        scan = f.scan(columns=["x"], filter=(rcfmt.col("x") >= 450) | (rcfmt.col("x") < 50), blocks=(2, 5))
        assert scan.read()["x"].to_pylist() == list(range(450, 500))
        assert scan.stats.blocks_total == 3 and scan.stats.blocks_pruned_stats == 2
        assert f.scan(blocks=(4, 4)).read().num_rows == 0
        for bad in [(3, 2), (-1, 2), (0, 11), "ab", (1,)]:
            with pytest.raises(InvalidOptionError):
                f.scan(blocks=bad)


def test_rows_without_columns_are_refused_not_dropped(tmp_path):
    """A table with rows but no columns has nowhere to keep its row count: refused, and
    nothing is left at the path (a file with no columns and no rows still writes)."""
    with pytest.raises(rcfmt.SchemaError, match="3 rows would be lost"):
        rcfmt.write_table(pa.table({"a": [1, 2, 3]}).select([]), tmp_path / "x.rcfmt")
    assert not (tmp_path / "x.rcfmt").exists()
    rcfmt.write_table(pa.table({"a": pa.array([], pa.int64())}).select([]), tmp_path / "y.rcfmt")
    assert rcfmt.read_table(tmp_path / "y.rcfmt").num_rows == 0
