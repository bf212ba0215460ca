"""month_interval and day_time_interval (issue 61), and extension types pyarrow
implements in C++ (``arrow.opaque``).

pyarrow 26 holds no *array* of either interval type in Python (``KeyError`` on every
column or chunk access), so rcfmt relabels whole tables and batches between them and
their storage types (int32 months; int64 = Arrow's {i32 days, i32 ms} bytes) through the
C data interface (rcfmt.interop.cdata). nanoarrow is the independent producer and
reader here: it builds the arrays from buffers, and decodes what rcfmt hands back
(months as ints, day_time as (days, ms) tuples). Filters are checked against a plain
Python oracle on the decoded values with SQL's three-valued logic.
"""
from __future__ import annotations

import json
import operator
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
from rcfmt import col
from rcfmt.errors import FilterError, SchemaError, UnsupportedError
from rcfmt.interop import cdata
from rcfmt.schema.types import logical_type_from_arrow, logical_type_from_json

na = pytest.importorskip("nanoarrow")

I32 = (-2**31, 2**31 - 1)
OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
EDGES = [I32[0], I32[1], 0, -1, 1]


# ------------------------------------------------------------------ building with nanoarrow
def _validity(values) -> bytes | None:
    if all(v is not None for v in values):
        return None
    return np.packbits(np.array([v is not None for v in values], bool), bitorder="little").tobytes()


def month_array(values, garbage: int = 7):
    """A nanoarrow month_interval array of ``values`` (ints or None; ``garbage`` under NULLs)."""
    data = np.array([garbage if v is None else v for v in values], np.int32)
    return na.c_array_from_buffers(na.interval_months(), len(values), [_validity(values), data.tobytes()])


def day_time_array(values, garbage=(3, -9)):
    """A nanoarrow day_time_interval array of ``values`` ((days, ms) tuples or None)."""
    data = np.array([garbage if v is None else v for v in values], np.int32).reshape(-1)
    return na.c_array_from_buffers(na.interval_day_time(), len(values), [_validity(values), data.tobytes()])


def column(arr) -> pa.ChunkedArray:
    """A pyarrow ChunkedArray of a nanoarrow array (through ``__arrow_c_stream__``)."""
    return pa.chunked_array(na.Array(arr))


def table_of(months, day_times, keys=None) -> pa.Table:
    keys = list(range(len(months))) if keys is None else keys
    return pa.table({"k": pa.array(keys, pa.int64()), "m": column(month_array(months)),
                     "d": column(day_time_array(day_times))})


def chunked(parts) -> pa.Table:
    """One table of several chunks: ``parts`` is a list of (months, day_times) lists."""
    tables, base = [], 0
    for months, day_times in parts:
        tables.append(table_of(months, day_times, list(range(base, base + len(months)))))
        base += len(months)
    return pa.concat_tables(tables)


def decoded(t: pa.Table, name: str) -> list:
    """What nanoarrow reads in column ``name`` (months as ints, (days, ms) tuples). The
    column goes through an IPC stream first, which writes it from offset 0: nanoarrow
    0.9 decodes a day_time_interval array of non-zero offset from its first slot."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return na.Array(pa.ipc.open_stream(sink.getvalue()).read_all().column(name)).to_pylist()


SAMPLE_M = [14, None, -3, I32[0], I32[1], 0, 14, None]
SAMPLE_D = [(1, 500), None, (-2, 7), (I32[0], I32[1]), (I32[1], I32[0]), (0, 0), (1, 500), (0, -1)]


@pytest.fixture
def sample(tmp_path):
    t = table_of(SAMPLE_M, SAMPLE_D)
    path = tmp_path / "i.rcfmt"
    rcfmt.write_table(t, path, block_rows=3, page_rows=2)
    return t, path


# ------------------------------------------------------------------ the C data interface module
def test_types_are_made_once_and_equal_to_nanoarrow_s():
    m, d = cdata.month_interval(), cdata.day_time_interval()
    assert m is cdata.month_interval() and d is cdata.day_time_interval()
    assert (m.id, d.id, str(m), str(d)) == (21, 22, "month_interval", "day_time_interval")
    t = table_of([1], [(1, 2)])
    assert t.schema.field("m").type == m and t.schema.field("d").type == d


def test_relabel_is_zero_copy_validated_and_free_without_intervals():
    t = table_of(SAMPLE_M, SAMPLE_D)
    s = cdata.to_storage(t)
    assert s.schema.field("m").type == pa.int32() and s.schema.field("d").type == pa.int64()
    assert s.column("m").chunk(0).buffers()[1].address == cdata.to_storage(t).column("m").chunk(0).buffers()[1].address
    assert s.column("m").to_pylist() == SAMPLE_M
    days_ms = [None if v is None else (((v & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000, v >> 32)
               for v in s.column("d").to_pylist()]
    assert days_ms == SAMPLE_D
    assert cdata.relabel(s, t.schema).equals(t)
    plain = pa.table({"x": [1, 2]})
    schema = plain.schema
    assert cdata.to_storage(plain) is plain and cdata.storage_schema(schema) is schema
    with pytest.raises(pa.ArrowInvalid):  # (a layout that does not fit: refused on import)
        cdata.relabel(s.select(["m"]), pa.schema([("m", pa.string())]))
    nested = pa.schema([("l", pa.list_(cdata.month_interval())), ("s", pa.struct([("a", cdata.day_time_interval())])),
                        ("mp", pa.map_(pa.string(), cdata.day_time_interval()))])
    assert cdata.storage_schema(nested) == pa.schema([("l", pa.list_(pa.int32())), ("s", pa.struct([("a", pa.int64())])),
                                                      ("mp", pa.map_(pa.string(), pa.int64()))])


def test_footer_json():
    for t, name, storage in ((cdata.month_interval(), "month_interval", "int32"),
                             (cdata.day_time_interval(), "day_time_interval", "int64")):
        lt = logical_type_from_arrow(t)
        assert lt.to_json() == {"type": name} and lt.name == storage
        again = logical_type_from_json(json.loads(json.dumps(lt.to_json())))
        assert again == lt and again.to_arrow() == t


# ------------------------------------------------------------------ round trips
def test_round_trip_and_every_read_path(sample):
    t, path = sample
    back = rcfmt.read_table(path)
    assert back.schema == t.schema and back.equals(t)
    assert decoded(back, "m") == SAMPLE_M and decoded(back, "d") == SAMPLE_D
    with rcfmt.open(path) as f:
        assert f.num_blocks == 3
        assert f.read(columns=["d"]).equals(t.select(["d"]))
        batches = list(f.iter_batches(batch_size=2))
        assert all(b.schema == t.schema for b in batches)
        assert pa.Table.from_batches(batches).equals(t)
        assert f.read_block(1).equals(t.slice(3, 3))
        assert f.take([7, 0, 3, 3]).equals(t.take([7, 0, 3, 3]))
        assert pa.table(f).equals(t)  # __arrow_c_stream__
        assert decoded(pa.table(f), "d") == SAMPLE_D
        scan = f.scan(columns=["m", "k"], filter=col("k") >= 2)
        assert scan.read().equals(t.select(["m", "k"]).slice(2))
        assert pa.table(f.scan(columns=["d"])).equals(t.select(["d"]))
        with_dict = f.read(columns=["m"], read_dictionary=["m"])
        assert with_dict.schema.field("m").type == pa.dictionary(pa.int32(), cdata.month_interval())
        assert decoded(with_dict, "m") == SAMPLE_M


def test_sliced_and_chunked_inputs(tmp_path):
    t = chunked([(SAMPLE_M, SAMPLE_D), ([5, None], [None, (9, 9)]), ([], [])]).slice(3, 7)
    path = tmp_path / "s.rcfmt"
    rcfmt.write_table(t, path, block_rows=4)
    back = rcfmt.read_table(path)
    assert back.equals(t) and decoded(back, "d") == decoded(t, "d")


def test_ipc_file_round_trip(tmp_path):
    t = table_of(SAMPLE_M, SAMPLE_D)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
    from_ipc = pa.ipc.open_file(sink.getvalue()).read_all()
    rcfmt.write_table(from_ipc, tmp_path / "ipc.rcfmt")
    back = rcfmt.read_table(tmp_path / "ipc.rcfmt")
    assert back.equals(t)
    sink = pa.BufferOutputStream()  # and back out through IPC
    with pa.ipc.new_file(sink, back.schema) as w:
        w.write_table(back)
    assert decoded(pa.ipc.open_file(sink.getvalue()).read_all(), "d") == SAMPLE_D


def test_writer_streams_batches_and_c_streams(tmp_path):
    t = chunked([(SAMPLE_M, SAMPLE_D), ([1, 2, 3], [(1, 1), None, (2, 2)])])
    with rcfmt.Writer(tmp_path / "w.rcfmt", t.schema, block_rows=4) as w:
        for batch in t.to_batches():
            w.write(batch)
        w.write(t.slice(0, 2))
    assert rcfmt.read_table(tmp_path / "w.rcfmt").equals(pa.concat_tables([t, t.slice(0, 2)]))
    rcfmt.write_table(pa.RecordBatchReader.from_stream(t), tmp_path / "r.rcfmt", block_rows=5)
    assert rcfmt.read_table(tmp_path / "r.rcfmt").equals(t)
    # a nanoarrow struct array: an Arrow PyCapsule stream rcfmt takes batch by batch
    struct = na.c_array_from_buffers(na.struct({"m": na.interval_months(), "d": na.interval_day_time()}), 3, [None],
                                     children=[month_array([1, None, -1]), day_time_array([None, (2, 3), (0, 0)])])
    rcfmt.write_table(na.Array(struct), tmp_path / "n.rcfmt")
    back = rcfmt.read_table(tmp_path / "n.rcfmt")
    assert decoded(back, "m") == [1, None, -1] and decoded(back, "d") == [None, (2, 3), (0, 0)]


def test_writer_keeps_intervals_apart_from_their_storage(tmp_path):
    t = table_of([1], [(1, 1)])
    with rcfmt.Writer(tmp_path / "a.rcfmt", t.schema) as w:
        with pytest.raises(SchemaError, match="'m' has type int32"):
            w.write(cdata.to_storage(t))
        w.write(t)
    with rcfmt.Writer(tmp_path / "b.rcfmt", cdata.storage_schema(t.schema)) as w:
        with pytest.raises(SchemaError, match="'m' has type month_interval"):
            w.write(t)


def test_nested_intervals(tmp_path):
    lst = na.c_array_from_buffers(na.list_(na.interval_months()), 3, [_validity([1, None, 1]),
                                                                      np.array([0, 2, 2, 3], np.int32).tobytes()],
                                  children=[month_array([14, None, -3])])
    st_ = na.c_array_from_buffers(na.struct({"a": na.interval_day_time(), "b": na.int32()}), 3, [None],
                                  children=[day_time_array([(1, 500), None, (2, 0)]), na.c_array([1, 2, 3], na.int32())])
    t = pa.table({"l": column(lst), "s": column(st_), "k": pa.array([0, 1, 2])})
    path = tmp_path / "n.rcfmt"
    rcfmt.write_table(t, path, block_rows=2)
    back = rcfmt.read_table(path)
    assert back.equals(t)
    assert decoded(back, "l") == [[14, None], None, [-3]]
    assert decoded(back, "s") == [{"a": (1, 500), "b": 1}, {"a": None, "b": 2}, {"a": (2, 0), "b": 3}]
    assert rcfmt.read_table(path, filter=col("s.a") == (2, 0))["k"].to_pylist() == [2]
    assert rcfmt.read_table(path, filter=rcfmt.list_contains(col("l"), -3))["k"].to_pylist() == [2]
    assert rcfmt.read_table(path, columns=["s.a"]).schema.field("s").type == pa.struct([("a", cdata.day_time_interval())])
    with rcfmt.open(path) as f:
        assert f.take([2, 0]).equals(t.take([2, 0]))


def test_dataset_write_read_scan_take(tmp_path):
    t = chunked([(SAMPLE_M, SAMPLE_D), ([5, None, 5], [(5, 5), (5, 5), None])])
    root = tmp_path / "ds"
    rcfmt.write_dataset(t, root, target_file_rows=4, block_rows=2)
    ds = rcfmt.dataset(root)
    assert ds.schema == t.schema
    assert ds.to_table().sort_by("k").equals(t)
    assert pa.table(ds.scan(columns=["k", "d"])).sort_by("k").equals(t.select(["k", "d"]))
    assert ds.take([1, 9]).equals(t.take([1, 9]))
    got = ds.to_table(filter=(col("m") == 5) | (col("d") == (1, 500)))
    assert sorted(got["k"].to_pylist()) == [0, 6, 8, 10]
    assert ds.count_rows(col("d").is_null()) == 2
    rcfmt.write_dataset(t.slice(0, 2), root, mode="append")
    assert rcfmt.dataset(root).to_table().num_rows == t.num_rows + 2


# ------------------------------------------------------------------ filters
def _oracle(months, day_times, expr) -> list[int]:
    """Rows (positions) where ``expr`` (a function of (m, d) giving True/False/None) is
    TRUE; None is SQL's unknown."""
    return [i for i, (m, d) in enumerate(zip(months, day_times)) if expr(m, d) is True]


def _eq(v, lit):
    return None if v is None else v == lit


def _ne(v, lit):
    return None if v is None else v != lit


def _not(x):
    return None if x is None else not x


def _isin(v, lits):
    return None if v is None else v in lits


def _and(a, b):
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _cmp(op):
    return lambda v, x: None if v is None else OPS[op](v, x)


def _filters(months, day_times):
    """(rcfmt filter, oracle) pairs on literals drawn from the values (and absent ones)."""
    # (and the values under the NULL slots: ``garbage`` of month_array/day_time_array)
    ms = [m for m in months if m is not None] + [12345, I32[0], 7]
    ds = [d for d in day_times if d is not None] + [(7, 7), (2**31, 0), (3, -9)]
    m, d = ms[len(ms) // 2], ds[len(ds) // 3]
    m2, d2 = ms[-1] if len(ms) == 3 else ms[len(ms) // 3], ds[-1] if len(ds) == 3 else ds[0]
    out = [
        (col("m") == m, lambda a, b: _eq(a, m)), (col("m") != m, lambda a, b: _ne(a, m)),
        (col("d") == d, lambda a, b: _eq(b, d)), (col("d") != d, lambda a, b: _ne(b, d)),
        (col("m").isin([m, m2]), lambda a, b: _isin(a, (m, m2))),
        (col("d").isin([d, d2, (2**40, 1)]), lambda a, b: _isin(b, (d, d2))),
        (~(col("m") == m), lambda a, b: _not(_eq(a, m))), (~(col("d") == d), lambda a, b: _not(_eq(b, d))),
        (~(col("d") != d), lambda a, b: _not(_ne(b, d))), (~col("d").isin([d, d2]), lambda a, b: _not(_isin(b, (d, d2)))),
        (col("m").is_null(), lambda a, b: a is None), (col("m").is_valid(), lambda a, b: a is not None),
        (col("d").is_null(), lambda a, b: b is None), (col("d").is_valid(), lambda a, b: b is not None),
        (~col("d").is_null(), lambda a, b: b is not None),
        ((col("d") == d) & (col("m") != m), lambda a, b: _and(_eq(b, d), _ne(a, m))),
    ]
    for op in ("<", "<=", ">", ">="):
        out.append((OPS[op](col("m"), m), lambda a, b, op=op: _cmp(op)(a, m)))
        out.append((~OPS[op](col("m"), m), lambda a, b, op=op: _not(_cmp(op)(a, m))))
    return out


def test_filters_match_the_oracle(sample):
    t, path = sample
    months, day_times = decoded(t, "m"), decoded(t, "d")
    for expr, oracle in _filters(months, day_times):
        got = rcfmt.read_table(path, filter=expr)
        assert got["k"].to_pylist() == _oracle(months, day_times, oracle), expr
        assert got.schema == t.schema


def test_filter_mixing_an_interval_and_an_int_column(sample):
    t, path = sample
    got = rcfmt.read_table(path, filter=(col("d") == (1, 500)) & (col("k") > 0))
    assert got["k"].to_pylist() == [6]
    got = rcfmt.read_table(path, filter=(col("m") == 14) | (col("k") == 2))
    assert got["k"].to_pylist() == [0, 2, 6]
    assert rcfmt.read_table(path, filter=[("d", "==", (1, 500))])["k"].to_pylist() == [0, 6]


@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
def test_order_comparisons_on_day_time_raise(sample, op):
    _, path = sample
    with pytest.raises(FilterError, match="day_time_interval.*no order"):
        rcfmt.read_table(path, filter=OPS[op](col("d"), (1, 500)))
    with pytest.raises(FilterError, match="no order"):
        rcfmt.read_table(path, filter=~OPS[op](col("d"), (1, 500)))


def test_literal_kinds(sample):
    _, path = sample
    for expr in (col("m") == 1.5, col("m") == "14", col("m") == True, col("d") == 5,  # noqa: E712
                 col("d") == (1,), col("d") == (1.0, 500), col("d") == [1, 500]):
        with pytest.raises(FilterError):
            rcfmt.read_table(path, filter=expr)
    assert rcfmt.read_table(path, filter=col("m") == np.int64(14))["k"].to_pylist() == [0, 6]
    assert rcfmt.read_table(path, filter=col("m") == 2**40).num_rows == 0  # beyond int32: folds to FALSE


months_st = st.one_of(st.none(), st.sampled_from(EDGES), st.integers(*I32))
day_times_st = st.one_of(st.none(), st.tuples(st.sampled_from(EDGES), st.sampled_from(EDGES)),
                         st.tuples(st.integers(*I32), st.integers(*I32)), st.just((1, 500)))


@st.composite
def tables(draw):
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.integers(0, 25))
        parts.append((draw(st.lists(months_st, min_size=n, max_size=n)),
                      draw(st.lists(day_times_st, min_size=n, max_size=n))))
    t = chunked(parts)
    lo = draw(st.integers(0, t.num_rows))
    return t.slice(lo, draw(st.integers(0, t.num_rows - lo)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(t=tables(), block_rows=st.integers(1, 9), page_rows=st.integers(1, 5), dictionary=st.booleans())
def test_hypothesis_round_trip_and_filters(tmp_path_factory, t, block_rows, page_rows, dictionary):
    path = tmp_path_factory.mktemp("h") / "h.rcfmt"
    rcfmt.write_table(t, path, block_rows=block_rows, page_rows=page_rows, dictionary=dictionary)
    back = rcfmt.read_table(path)
    assert back.schema == t.schema and back.equals(t)
    months, day_times = decoded(t, "m"), decoded(t, "d")
    assert decoded(back, "m") == months and decoded(back, "d") == day_times
    keys = t["k"].to_pylist()
    for expr, oracle in _filters(months, day_times):
        got = rcfmt.read_table(path, filter=expr)["k"].to_pylist()
        assert got == [keys[i] for i in _oracle(months, day_times, oracle)], expr


# ------------------------------------------------------------------ the rest of rcfmt around them
def test_fresh_interpreter_reads_them_first_thing(sample, tmp_path):
    _, path = sample
    ext = pa.table({"o": pa.ExtensionArray.from_storage(pa.opaque(pa.int32(), "t", "v"), pa.array([1, None], pa.int32()))})
    rcfmt.write_table(ext, tmp_path / "o.rcfmt")
    code = ("import rcfmt, nanoarrow as na, sys\n"
            "t = rcfmt.read_table(sys.argv[1])\n"
            "o = rcfmt.read_table(sys.argv[2]).schema.field('o').type\n"
            "print(t.schema.field('m').type, t.schema.field('d').type, o.type_name, o.vendor_name)\n"
            "print(na.Array(t.column('d')).to_pylist()[:3])\n")
    out = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "o.rcfmt")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["month_interval day_time_interval t v", "[(1, 500), None, (-2, 7)]"]


def test_cli_shows_them(sample, capsys):
    from rcfmt.cli import main

    _, path = sample
    assert main(["cat", "--format", "json", "--columns", "m,d", str(path)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[0] == {"m": 14, "d": {"days": 1, "milliseconds": 500}} and rows[1] == {"m": None, "d": None}
    assert main(["cat", "--columns", "m,d", str(path)]) == 0  # CSV: as JSON text
    assert capsys.readouterr().out.splitlines()[1] == '"14","{""days"": 1, ""milliseconds"": 500}"'
    assert main(["inspect", str(path)]) == 0
    assert "day_time_interval" in capsys.readouterr().out
    assert main(["head", "--json", str(path)]) == 0


def test_polars_and_pandas_say_they_cannot_hold_them(sample):
    pytest.importorskip("polars")
    from rcfmt.polars import scan_rcfmt

    _, path = sample
    with pytest.raises(UnsupportedError, match="'m' is month_interval, which Polars has no type for"):
        scan_rcfmt(path)
    with pytest.raises(pa.ArrowNotImplementedError, match="month_interval"):
        rcfmt.read_table(path).to_pandas()


def test_spark_refuses_them_by_name():
    pytest.importorskip("pyspark")
    from spark_datasource.types import to_spark_type

    for t in (cdata.month_interval(), cdata.day_time_interval()):
        with pytest.raises(TypeError, match=f"'x': type {t} has no Spark mapping"):
            to_spark_type(t, "x")


# ------------------------------------------------------------------ docs/FORMAT.md's worked examples
FORMAT = (Path(__file__).resolve().parents[2] / "docs" / "FORMAT.md").read_text()


@pytest.mark.parametrize("name, arr, header, body", [
    ("month_interval", lambda: month_array([14, None], garbage=14), "month_interval [14, NULL]",
     "01 | 0e 00 00 00 | 0e 00 00 00"),
    ("day_time_interval", lambda: day_time_array([(1, 500), None], garbage=(1, 500)),
     "day_time_interval [1d500ms, NULL]", "01 | 01 00 00 00 f4 01 00 00 | 01 00 00 00 f4 01 00 00"),
])
def test_format_worked_examples(tmp_path, name, arr, header, body):
    """The PLAIN pages docs/FORMAT.md section 3.1 shows, byte for byte (the NULL slot's
    value is the writer's choice: rcfmt repeats the value before it)."""
    from rcfmt.format.layout import PAGE_HEADER, PAGE_HEADER_SIZE

    lines = FORMAT.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(header))
    assert f'{{"type":"{name}"}}' in lines[at] and lines[at + 1].strip().startswith(body)
    path = tmp_path / "p.rcfmt"
    rcfmt.write_table(pa.table({"x": column(arr())}), path, encoding="plain", compression="none",
                      dictionary=False, bloom_filter_columns=None, bitmap_indexes=None)
    with rcfmt.open(path) as f:
        assert f.footer.columns[0].type.to_json() == {"type": name}
        chunk = f.footer.chunks[0][0]
        raw = f.read_range(int(chunk["offset"]), int(chunk["length"]))
    fields = PAGE_HEADER.unpack(raw[:PAGE_HEADER_SIZE])
    assert fields[3] == 1  # flags: a validity bitmap
    assert raw[PAGE_HEADER_SIZE:] == bytes.fromhex(body.replace("|", "").replace(" ", ""))


# ------------------------------------------------------------------ extension types pyarrow implements in C++
@pytest.mark.parametrize("storage, values", [(pa.int32(), [1, None, -5]), (pa.string(), ["a", None, "zz"])])
def test_opaque_round_trips_as_itself(tmp_path, storage, values):
    t = pa.opaque(storage, "geometry", "acme")
    assert cdata.extension_metadata(t) == ("arrow.opaque", b'{"type_name":"geometry","vendor_name":"acme"}')
    assert cdata.extension_metadata(pa.int32()) is None
    table = pa.table({"o": pa.ExtensionArray.from_storage(t, pa.array(values, storage)), "k": [0, 1, 2]})
    path = tmp_path / "o.rcfmt"
    rcfmt.write_table(table, path)
    back = rcfmt.read_table(path)
    assert back.equals(table) and back.schema.field("o").type == t
    assert (back.schema.field("o").type.type_name, back.schema.field("o").type.vendor_name) == ("geometry", "acme")
    with rcfmt.open(path) as f:
        meta = f.footer.columns[0].type.to_json()
    assert meta["extension_name"] == "arrow.opaque" and meta["storage"]["type"] == str(storage)
    assert rcfmt.read_table(path, filter=col("o").is_null())["k"].to_pylist() == [1]
