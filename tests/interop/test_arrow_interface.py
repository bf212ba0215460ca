"""The Arrow PyCapsule interface: writers take any Arrow producer (streams batch by
batch), and files, scans and datasets are Arrow streams any consumer can read."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
from rcfmt.errors import SchemaError


def _table(n=5000):
    return pa.table({"i": pa.array(np.arange(n, dtype=np.int64)),
                     "s": pa.array([f"v{k % 37}" for k in range(n)]),
                     "f": pa.array(np.linspace(0, 1, n))})


class StreamOnly:
    """A producer that speaks only the PyCapsule protocol (no pyarrow types), and counts
    how many batches were pulled."""

    def __init__(self, table, chunk):
        self.batches = table.to_batches(max_chunksize=chunk)
        self.schema = table.schema

    def __arrow_c_stream__(self, requested_schema=None):
        return pa.RecordBatchReader.from_batches(self.schema, iter(self.batches)).__arrow_c_stream__(requested_schema)


class ArrayOnly:
    def __init__(self, batch):
        self.batch = batch

    def __arrow_c_array__(self, requested_schema=None):
        return self.batch.__arrow_c_array__(requested_schema)


def test_writers_take_pycapsule_producers(tmp_path):
    table = _table()
    rcfmt.write_table(StreamOnly(table, 700), tmp_path / "s.rcfmt", block_rows=2000)
    got = rcfmt.read_table(tmp_path / "s.rcfmt")
    assert got.equals(table)
    with rcfmt.open(tmp_path / "s.rcfmt") as f:  # streamed into blocks of block_rows
        assert f.num_blocks == 3
    batch = table.to_batches()[0]
    rcfmt.write_table(ArrayOnly(batch), tmp_path / "a.rcfmt")
    assert rcfmt.read_table(tmp_path / "a.rcfmt").equals(pa.Table.from_batches([batch]))
    with pytest.raises(SchemaError, match="__arrow_c_stream__"):
        rcfmt.write_table(object(), tmp_path / "x.rcfmt")
    assert not (tmp_path / "x.rcfmt").exists()


def test_polars_and_duckdb_in_and_out(tmp_path):
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    table = _table()
    rcfmt.write_table(pl.from_arrow(table), tmp_path / "p.rcfmt")  # a polars DataFrame
    assert rcfmt.read_table(tmp_path / "p.rcfmt").cast(table.schema).equals(table)
    con = duckdb.connect()
    rel = con.sql("SELECT i, s FROM range(0, 1000) t(i), (SELECT 'x' AS s) WHERE i % 3 = 0")
    rcfmt.write_table(rel, tmp_path / "d.rcfmt")  # a DuckDB relation
    assert rcfmt.read_table(tmp_path / "d.rcfmt").column("i").to_pylist() == list(range(0, 1000, 3))

    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=1000)
    with rcfmt.open(path) as f:
        scan = f.scan(columns=["i", "s"], filter=rcfmt.col("i") >= 4200)
        df = pl.DataFrame(scan)  # the pruned scan, read through the C stream
        assert df["i"].to_list() == list(range(4200, 5000))
        assert scan.stats.blocks_pruned_stats == 4  # blocks before row 4000 never read
        assert pa.table(f).equals(table)
        scan = f.scan(filter=rcfmt.col("s") == "v3")
        got = con.execute("SELECT count(*), min(i) FROM scan").fetchone()
        assert got == (sum(1 for k in range(5000) if k % 37 == 3), 3)


def test_dataset_and_its_scans_are_streams(tmp_path):
    table = _table()
    rcfmt.write_dataset(StreamOnly(table, 1000), tmp_path / "ds", target_file_rows=2000)
    ds = rcfmt.dataset(tmp_path / "ds")
    assert pa.table(ds).sort_by("i").equals(table)
    scan = ds.scan(columns=["i"], filter=rcfmt.col("i") < 10)
    assert pa.table(scan).column("i").to_pylist() == list(range(10))
    duckdb = pytest.importorskip("duckdb")  # (it takes a stream's schema from __arrow_c_schema__ or .schema)
    for scan in (ds.scan(columns=["s", "i"], filter=rcfmt.col("i") < 10), ds.scan(["i"], with_row_position=True)):
        names = scan.output_schema.names
        got = duckdb.connect().execute(f"SELECT {', '.join(names)} FROM scan ORDER BY i LIMIT 3").fetchall()
        want = pa.table(scan).sort_by("i").slice(0, 3)
        assert got == [tuple(r[n] for n in names) for r in want.to_pylist()]


def test_unknown_write_options_are_named(tmp_path):
    from rcfmt.errors import UnknownOptionError  # an InvalidOptionError and a TypeError

    with pytest.raises(UnknownOptionError, match="max_rows_per_file"):
        rcfmt.write_dataset(_table(10), tmp_path / "ds", max_rows_per_file=5)
    with pytest.raises(UnknownOptionError, match="blockrows"):
        rcfmt.write_table(_table(10), tmp_path / "t.rcfmt", blockrows=5)
    assert not any(tmp_path.iterdir())


def test_string_and_binary_views_are_stored_as_strings_and_binaries(tmp_path):
    """Polars hands strings over as string_view: stored (and read back) as string."""
    table = pa.table({"s": pa.array(["a", None, "long enough to not be inlined"], pa.string_view()),
                      "b": pa.array([b"\x00", b"xyz" * 10, None], pa.binary_view())})
    rcfmt.write_table(table, tmp_path / "v.rcfmt")
    got = rcfmt.read_table(tmp_path / "v.rcfmt")
    assert got.schema.types == [pa.string(), pa.binary()]
    assert got.equals(table.cast(pa.schema([("s", pa.string()), ("b", pa.binary())])))
