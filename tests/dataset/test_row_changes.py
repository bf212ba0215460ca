"""Deletes, updates and merges (deletion vectors, merge-on-read) checked against an
in-memory pyarrow table as the oracle: a hypothesis state machine of appends, deletes,
updates, merges, optimizes, time travel and vacuum, every read path checked after every
step with filters decided by the independent oracle (tests/oracle_filter.py)."""
from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import shutil
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import rcfmt
from rcfmt import col

from oracle_filter import selection_mask
from strategies import examples

PREFIX = "customer-account-reference-0000000000-"
SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string()), ("g", pa.int32())])
WRITE = dict(block_rows=16, page_rows=4, target_file_rows=40)

floats = st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, -2.0, math.nan, 3.25, 1e300]))
strings = st.one_of(st.none(), st.builds(lambda i: PREFIX + str(i), st.integers(0, 9)))
groups = st.one_of(st.none(), st.integers(0, 5))


def _rows(draw, ids: list[int]) -> pa.Table:
    n = len(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array([draw(floats) for _ in range(n)], pa.float64()),
                     "s": pa.array([draw(strings) for _ in range(n)], pa.string()),
                     "g": pa.array([draw(groups) for _ in range(n)], pa.int32())}, schema=SCHEMA)


@st.composite
def leaves(draw):
    kind = draw(st.sampled_from(["lt", "eq", "ge", "ne", "isin", "null", "valid", "nan", "prefix", "gisin", "id"]))
    if kind == "lt":
        return col("x") < draw(st.sampled_from([0.0, -0.0, 2.0, math.nan]))
    if kind == "eq":
        return col("x") == draw(st.sampled_from([0.0, -0.0, 1.5, math.nan]))
    if kind == "ge":
        return col("s") >= PREFIX + str(draw(st.integers(0, 9)))
    if kind == "ne":
        return col("g") != draw(st.integers(0, 5))
    if kind == "isin":
        return col("s").isin([PREFIX + str(i) for i in draw(st.lists(st.integers(0, 9), max_size=3))])
    if kind == "null":
        return col(draw(st.sampled_from(["x", "s", "g"]))).is_null()
    if kind == "valid":
        return col(draw(st.sampled_from(["x", "s", "g"]))).is_valid()
    if kind == "nan":
        return col("x").is_nan()
    if kind == "prefix":
        return col("s").startswith(PREFIX + draw(st.sampled_from(["", "1", "2"])))
    if kind == "gisin":
        return col("g").isin(draw(st.lists(st.integers(0, 5), max_size=3)))
    return col("id") < draw(st.integers(0, 400))


@st.composite
def filters(draw):
    expr = draw(leaves())
    for _ in range(draw(st.integers(0, 2))):
        other = draw(leaves())
        expr = draw(st.sampled_from([expr & other, expr | other, ~expr, ~other & expr]))
    return expr


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by("id")


def _same_rows(got: pa.Table, want: pa.Table) -> None:
    got, want = _sorted(got.select(SCHEMA.names)), _sorted(want.select(SCHEMA.names))
    assert got.num_rows == want.num_rows
    assert got.to_pydict().keys() == want.to_pydict().keys()
    for name in SCHEMA.names:  # (NaN == NaN here: compared by their bits)
        a, b = got.column(name).to_pylist(), want.column(name).to_pylist()
        assert [repr(v) for v in a] == [repr(v) for v in b], name


def _identical(got: pa.Table, want: pa.Table) -> bool:
    """Same rows in the same order (NaN equal to NaN)."""
    return got.schema == want.schema and all(
        [repr(v) for v in got.column(n).to_pylist()] == [repr(v) for v in want.column(n).to_pylist()]
        for n in want.column_names)


class RowChanges(RuleBasedStateMachine):
    """Random appends, deletes, updates, merges, optimizes and vacuums, each checked."""

    @initialize(data=st.data())
    def start(self, data):
        self.root = tempfile.mkdtemp(prefix="rcfmt-changes-")
        self.next_id = 0
        self.oracle = self._new(data, data.draw(st.integers(1, 90)))
        self.ds = rcfmt.write_dataset(self.oracle, self.root, **WRITE)
        self.versions = {self.ds.version: self.oracle}

    def teardown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def _new(self, data, n: int) -> pa.Table:
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return _rows(data.draw, ids)

    def _committed(self, ds) -> None:
        self.ds = ds
        self.versions[ds.version] = self.oracle

    @rule(data=st.data())
    def append(self, data):
        rows = self._new(data, data.draw(st.integers(1, 50)))
        self.oracle = pa.concat_tables([self.oracle, rows])
        self._committed(rcfmt.write_dataset(rows, self.root, **WRITE))

    @rule(data=st.data())
    def delete(self, data):
        expr = data.draw(filters())
        keep = ~selection_mask(expr, self.oracle)
        self.oracle = self.oracle.filter(pa.array(keep))
        ds = self.ds.delete(expr)
        assert ds.num_rows == self.oracle.num_rows
        self._committed(ds)

    @rule(data=st.data())
    def update(self, data):
        expr = data.draw(filters())
        column = data.draw(st.sampled_from(["x", "s", "g"]))
        value = data.draw({"x": floats, "s": strings, "g": groups}[column])
        hit = selection_mask(expr, self.oracle)
        changed = self.oracle.filter(pa.array(hit))
        changed = changed.set_column(changed.schema.get_field_index(column), column,
                                     pa.array([value] * changed.num_rows, SCHEMA.field(column).type))
        self.oracle = pa.concat_tables([self.oracle.filter(pa.array(~hit)), changed])
        self._committed(self.ds.update(expr, {column: value}))

    @rule(data=st.data(), matched=st.sampled_from(["update", "delete", None]),
          not_matched=st.sampled_from(["insert", None]))
    def merge(self, data, matched, not_matched):
        old = self.oracle.column("id").to_pylist()
        picked = data.draw(st.lists(st.sampled_from(old), unique=True, max_size=8)) if old else []
        fresh = self._new(data, data.draw(st.integers(0, 6)))
        source = pa.concat_tables([_rows(data.draw, picked), fresh])
        if data.draw(st.booleans()):  # a source of some columns only
            source = source.select(["id", "g"])
        hit = np.isin(np.asarray(self.oracle.column("id")), np.asarray(picked, np.int64))
        kept = self.oracle.filter(pa.array(~hit))
        parts = [kept]
        if matched is None:
            parts = [self.oracle]
        elif matched == "update":
            idx = {v: i for i, v in enumerate(source.column("id").to_pylist())}
            target = self.oracle.filter(pa.array(hit))
            rows = source.take(pa.array([idx[v] for v in target.column("id").to_pylist()], pa.int64()))
            for name in SCHEMA.names:
                if name not in source.column_names:
                    rows = rows.append_column(name, target.column(name))
            parts.append(rows.select(SCHEMA.names).cast(SCHEMA))
        if not_matched == "insert":
            new = source.filter(pa.array(~np.isin(np.asarray(source.column("id")), np.asarray(old, np.int64))))
            for name in SCHEMA.names:
                if name not in new.column_names:
                    new = new.append_column(name, pa.nulls(new.num_rows, SCHEMA.field(name).type))
            parts.append(new.select(SCHEMA.names).cast(SCHEMA))
        self.oracle = pa.concat_tables(parts)
        self._committed(self.ds.merge(source, on="id", when_matched=matched, when_not_matched=not_matched))

    @rule(threshold=st.sampled_from([0.0, 0.1, 1.0]), cluster=st.booleans())
    def optimize(self, threshold, cluster):
        ds = self.ds.optimize(["g", "x"] if cluster else None, target_file_rows=40, block_rows=16,
                              deleted_threshold=threshold)
        if threshold == 0.0:  # every file with a deleted row was rewritten without it
            assert ds.num_deleted_rows == 0
        self._committed(ds)

    @rule()
    def vacuum(self):
        self.ds.vacuum(retention_seconds=0, enforce_retention_duration=False)
        self.versions = {self.ds.version: self.oracle}

    @rule(data=st.data())
    def time_travel(self, data):
        version = data.draw(st.sampled_from(sorted(self.versions)))
        _same_rows(rcfmt.dataset(self.root, version=version).read(), self.versions[version])

    # ---------------------------------------------------------------- every read path
    @invariant()
    def reads_match_the_oracle(self):
        ds = rcfmt.dataset(self.root)
        assert ds.version == self.ds.version
        want = self.oracle
        assert ds.num_rows == want.num_rows == ds.count_rows()
        table = ds.read()
        _same_rows(table, want)
        assert _identical(pa.Table.from_batches(list(ds.iter_batches(batch_size=7)), schema=table.schema), table)
        assert _identical(pa.table(ds), table)  # the Arrow stream (Polars, DuckDB, pandas read this)
        positions = ds.read(["id"], with_row_position=True)
        assert positions.column("_row_position").to_pylist() == list(range(want.num_rows))
        assert positions.column("id").equals(table.column("id"))
        if want.num_rows:
            rng = np.random.default_rng(want.num_rows)
            at = rng.integers(0, want.num_rows, size=min(12, want.num_rows))
            assert _identical(ds.take(at), table.take(pa.array(at)))
        with pytest.raises(rcfmt.RowIndexError):
            ds.take([want.num_rows])

    @rule(data=st.data())
    def filtered_reads(self, data):
        expr = data.draw(filters())
        ds = rcfmt.dataset(self.root)
        want = self.oracle.filter(pa.array(selection_mask(expr, self.oracle)))
        _same_rows(ds.read(filter=expr), want)
        assert ds.count_rows(expr) == want.num_rows
        got = ds.read(["id"], filter=expr, with_row_position=True)
        everything = ds.read(["id"])
        assert everything.take(got.column("_row_position")).column("id").equals(got.column("id"))


RowChanges.TestCase.settings = settings(max_examples=25, stateful_step_count=12, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow])
test_row_changes_against_the_oracle = RowChanges.TestCase


# ------------------------------------------------------------------ focused cases
@pytest.fixture
def lineitem_like(tmp_path):
    n = 20_000
    rng = np.random.default_rng(7)
    table = pa.table({"k": np.arange(n, dtype=np.int64), "v": rng.normal(size=n),
                      "s": pa.array([f"{PREFIX}{i % 97}" for i in range(n)])})
    ds = rcfmt.write_dataset(table, str(tmp_path / "d"), target_file_rows=5000, block_rows=1024)
    return ds, table


def test_delete_writes_no_data_file_and_vectors_are_loaded_by_every_reader(lineitem_like):
    ds, table = lineitem_like
    before = sorted(os.listdir(ds.root))
    out = ds.delete(col("k").isin(list(range(0, 20_000, 7))))
    assert sorted(os.listdir(ds.root)) == before  # no data file rewritten or added
    assert out.num_rows == 20_000 - len(range(0, 20_000, 7)) == out.count_rows()
    assert out.num_deleted_rows == len(range(0, 20_000, 7))
    assert out.info["operation"] == "delete" and out.info["rows_deleted"] == out.num_deleted_rows
    assert out.info["format_version"] >= 2  # older readers refuse it rather than return deleted rows
    files = os.listdir(os.path.join(ds.root, "_rcfmt", "deletions"))
    assert len(files) == 1 and files[0].endswith(".rcdv")  # one deletion file per commit, vectors too big to inline
    assert out.read(["k"]).column("k").to_pylist() == [k for k in range(20_000) if k % 7]


def test_count_rows_after_deletes_reads_no_data_page(lineitem_like, monkeypatch):
    ds, _ = lineitem_like
    out = ds.delete(col("k") < 3000)
    from rcfmt.file.reader import RcfmtFile

    def no_open(*args, **kwargs):
        raise AssertionError("count_rows opened a data file")

    monkeypatch.setattr(RcfmtFile, "__init__", no_open)
    assert out.count_rows() == 17_000  # from the index: rows less the vectors' cardinalities


def test_blocks_and_pages_wholly_deleted_are_not_read(lineitem_like):
    ds, _ = lineitem_like
    out = ds.delete((col("k") >= 1024) & (col("k") < 4096))  # blocks 1-3 of the first file
    scan = out.scan(["v"])
    rows = scan.read()
    assert rows.num_rows == 20_000 - 3072
    assert scan.stats.rows_decoded <= 20_000 - 3072  # the deleted blocks were never decoded
    one = rcfmt.dataset(out.root).scan(["v"], col("k") < 5000)
    assert one.read().num_rows == 5000 - 3072


def test_update_moves_rows_to_new_files_whose_stats_prune(lineitem_like):
    ds, _ = lineitem_like
    out = ds.update(col("k") < 10, {"v": 1e9, "s": "fixed"})
    assert out.info["rows_updated"] == 10 and out.num_rows == 20_000
    assert out.read(filter=col("v") > 1e8).column("k").to_pylist() == list(range(10))
    scan = out.scan(["k"], col("s") == "fixed")
    assert scan.read().num_rows == 10
    assert scan.stats.files_pruned == 4  # only the new file may hold "fixed"


def test_merge_upserts_and_finds_targets_by_skipping(lineitem_like):
    ds, _ = lineitem_like
    src = pa.table({"k": pa.array([5, 19_999, 50_000, 50_001], pa.int64()), "v": [1.0, 2.0, 3.0, 4.0]})
    out = ds.merge(src, on="k")
    assert out.info["rows_updated"] == 2 and out.info["rows_inserted"] == 2
    got = out.read(filter=col("k").isin([5, 19_999, 50_000, 50_001])).sort_by("k")
    assert got.column("v").to_pylist() == [1.0, 2.0, 3.0, 4.0]
    assert got.column("s").to_pylist()[:2] == [f"{PREFIX}5", f"{PREFIX}{19_999 % 97}"]  # kept from the target
    assert got.column("s").to_pylist()[2:] == [None, None]
    assert out.num_rows == 20_002


def test_new_files_start_from_the_encodings_of_the_latest_file(tmp_path, monkeypatch):
    """An upsert's and an append's new files take the encodings the dataset's latest
    file chose (under a column's new name after a rename) without compressing samples
    where that file compressed, and hold the right rows."""
    from rcfmt.dataset.files import inherited_hints
    from rcfmt.encodings import selector
    from rcfmt.file.chunk_encoding import chunk_hints

    n = 40_000
    rng = np.random.default_rng(11)
    table = pa.table({"k": np.arange(n, dtype=np.int64) * 8 + rng.integers(0, 8, n),
                      "price": np.round(rng.uniform(900, 100_000, n), 2),
                      "s": pa.array([f"{PREFIX}{i % 97}" for i in rng.integers(0, 10**6, n)])})
    ds = rcfmt.write_dataset(table, str(tmp_path / "d"), target_file_rows=20_000)
    ds = ds.evolve(rename={"price": "p"})
    last = os.path.join(ds.root, ds.snapshot.paths[-1])
    with rcfmt.open(last) as f:
        stored = chunk_hints(f.footer)
    hints = inherited_hints(last, ds.schema, ds.column_ids)
    assert hints == {"k": stored["k"], "p": stored["price"], "s": stored["s"]}
    calls = []
    real = selector._compressed_estimate
    monkeypatch.setattr(selector, "_compressed_estimate", lambda *a, **k: calls.append(a[0].name) or real(*a, **k))
    old = table.column("k").to_pylist()
    src = pa.table({"k": pa.array([old[1], old[2], n * 8 + 1, n * 8 + 9] + list(range(n * 8 + 100, n * 8 + 40_100, 8)),
                                  pa.int64()),
                    "p": np.round(rng.uniform(900, 100_000, 4 + 5000), 2),
                    "s": pa.array([f"{PREFIX}{i}" for i in rng.integers(0, 97, 4 + 5000)])})
    out = ds.merge(src, on="k")
    sampled = len([h for h in hints.values() if h.compression != "zstd"])
    assert len(calls) <= sampled  # (a column stored raw is checked on one sample)
    new = [p for p in out.snapshot.paths if p not in ds.snapshot.paths]
    with rcfmt.open(os.path.join(out.root, new[0])) as f:
        assert {c: d.name for c, d in chunk_hints(f.footer).items()} == {c: d.name for c, d in hints.items()}
    assert out.info["rows_updated"] == 2 and out.num_rows == n + 5002
    got = out.read(filter=col("k").isin([old[1], old[2], n * 8 + 1])).sort_by("k")
    assert got.column("p").to_pylist() == src.column("p").to_pylist()[:3]
    calls.clear()
    more = rcfmt.write_dataset(src.set_column(0, "k", pa.array(np.arange(5004, dtype=np.int64) + 10**9)),
                               out.root, mode="append")
    assert len(calls) <= sampled and more.num_rows == n + 5002 + 5004


@given(st.lists(st.integers(-50, 50), max_size=40), st.lists(st.integers(-50, 50), max_size=40, unique=True),
       st.sampled_from([pa.int64(), pa.int8(), pa.uint32()]))
@settings(max_examples=examples(150), deadline=None)
def test_merge_pairs_of_one_integer_key_are_the_hash_joins(target_keys, source_keys, key_type):
    """A merge on one integer key pairs target and source rows by searching the sorted
    source keys: the same pairs as Arrow's hash join (target keys repeated or unmatched,
    either side empty)."""
    from rcfmt.dataset import changes

    if key_type == pa.uint32():
        target_keys, source_keys = [abs(k) for k in target_keys], sorted({abs(k) for k in source_keys})
    target = pa.table({"k": pa.array(target_keys, key_type),
                       changes._TARGET_ROW: pa.array(np.arange(len(target_keys)), pa.int64())})
    keyed = pa.table({"k": pa.array(source_keys, key_type),
                      changes._SOURCE_ROW: pa.array(np.arange(len(source_keys)) * 3 + 1, pa.int64())})
    t_rows, s_rows = changes._matches(target, keyed, ["k"])
    joined = target.join(keyed, ["k"], join_type="inner", use_threads=False)
    want = sorted(zip(joined.column(changes._TARGET_ROW).to_pylist(), joined.column(changes._SOURCE_ROW).to_pylist()))
    assert sorted(zip(t_rows.tolist(), s_rows.tolist())) == want


def _unstaged(root: str) -> bool:
    staging = os.path.join(root, "_rcfmt", "_staging")
    return not os.path.isdir(staging) or not os.listdir(staging)


def _unreferenced(ds) -> set:
    files = {os.path.relpath(os.path.join(d, n), ds.root) for d, _, names in os.walk(ds.root)
             if "_rcfmt" not in d for n in names}
    return files - {os.path.relpath(f.path, ds.root) for f in rcfmt.dataset(ds.root).files}


def test_an_upsert_written_while_planning_retries_and_fails_cleanly(lineitem_like, monkeypatch):
    """An upsert of every column writes its rows while it scans for the matches: after a
    conflicting commit it plans and writes again (the first attempt's files removed), and
    a failed plan leaves no staged file behind."""
    from rcfmt.dataset import changes

    ds, _ = lineitem_like
    src = pa.table({"k": pa.array([5, 7, 60_000], pa.int64()), "v": [1.0, 2.0, 3.0],
                    "s": ["a", "b", "c"]})
    real, calls = changes._vectors_after, []

    def racing(dataset, removed, out):  # another writer deletes row 7 just before the first commit
        calls.append(dataset.version)
        if len(calls) == 1:
            rcfmt.dataset(dataset.root).delete(col("k") == 7)
        return real(dataset, removed, out)

    monkeypatch.setattr(changes, "_vectors_after", racing)
    out = ds.merge(src, on="k")
    assert calls == [1, 1, 2] and out.version == 3  # the merge, the racing delete, the merge again
    got = out.read(filter=col("k").isin([5, 7, 60_000])).sort_by("k")
    assert got.column("v").to_pylist() == [1.0, 2.0, 3.0] and out.info["rows_updated"] == 1  # (7 was deleted)
    assert _unstaged(ds.root) and not _unreferenced(out)
    monkeypatch.setattr(changes, "_vectors_after", real)

    def broken(*_):
        raise RuntimeError("plan failed")

    monkeypatch.setattr(changes, "_by_file", broken)
    with pytest.raises(RuntimeError, match="plan failed"):
        out.merge(src, on="k")
    assert _unstaged(ds.root) and not _unreferenced(out) and rcfmt.dataset(ds.root).version == 3


@pytest.mark.parametrize("source", ["pandas", "polars", "reader"])
def test_merge_takes_any_arrow_source(lineitem_like, source):
    ds, _ = lineitem_like
    t = pa.table({"k": pa.array([1, 30_000], pa.int64()), "v": [7.0, 8.0]})
    data = {"pandas": lambda: t.to_pandas(), "polars": lambda: __import__("polars").from_arrow(t),
            "reader": lambda: pa.RecordBatchReader.from_batches(t.schema, t.to_batches())}[source]()
    out = ds.merge(data, on="k", when_matched="delete")
    assert out.num_rows == 20_000 - 1 + 1
    assert out.read(filter=col("k") == 1).num_rows == 0
    if source == "reader":  # a stream of no batch merges nothing (it raised Arrow's "at least one table")
        empty = pa.RecordBatchReader.from_batches(t.schema, [])
        assert ds.merge(empty, on="k").version == ds.version


def test_null_keys_match_nothing(tmp_path):
    t = pa.table({"k": pa.array([1, None, 3], pa.int64()), "v": [1.0, 2.0, 3.0]})
    ds = rcfmt.write_dataset(t, str(tmp_path / "d"))
    out = ds.merge(pa.table({"k": pa.array([None, 3], pa.int64()), "v": [9.0, 9.5]}), on="k")
    got = out.read().sort_by([("k", "ascending"), ("v", "ascending")])
    assert got.to_pydict() == {"k": [1, 3, None, None], "v": [1.0, 9.5, 2.0, 9.0]}


def test_bad_changes_raise_before_anything_is_written(lineitem_like):
    ds, _ = lineitem_like
    versions = len(ds.history())
    with pytest.raises(rcfmt.SchemaError):
        ds.delete(col("nope") == 1)
    with pytest.raises(rcfmt.InvalidOptionError):
        ds.delete(None)
    with pytest.raises(rcfmt.SchemaError, match="unknown column"):
        ds.update(col("k") == 1, {"nope": 1})
    with pytest.raises(rcfmt.SchemaError, match="not a value"):
        ds.update(col("k") == 1, {"k": "text"})
    with pytest.raises(rcfmt.SchemaError, match="merge key"):
        ds.merge(pa.table({"v": [1.0]}), on="k")
    with pytest.raises(rcfmt.SchemaError, match="merge key"):
        ds.merge(pa.table({"k": [1]}), on="missing")
    with pytest.raises(rcfmt.SchemaError, match="not a column of the dataset"):
        ds.merge(pa.table({"k": [1], "w": [2]}), on="k")
    with pytest.raises(rcfmt.InvalidDataError, match="more than once"):
        ds.merge(pa.table({"k": [1, 1]}), on="k")
    with pytest.raises(rcfmt.InvalidOptionError):
        ds.merge(pa.table({"k": [1]}), on="k", when_matched="upsert")
    assert len(rcfmt.dataset(ds.root).history()) == versions
    assert not os.path.exists(os.path.join(ds.root, "_rcfmt", "deletions"))


def test_history_optimize_and_vacuum_of_deletion_files(lineitem_like):
    ds, _ = lineitem_like
    one = ds.delete(col("k") % 2 == 0) if hasattr(col("k"), "__mod__") else ds.delete(
        col("k").isin(list(range(0, 20_000, 2))))
    dv_dir = os.path.join(ds.root, "_rcfmt", "deletions")
    assert len(os.listdir(dv_dir)) == 1
    two = one.optimize(deleted_threshold=0.4)
    assert two.num_deleted_rows == 0 and two.num_rows == 10_000
    assert rcfmt.dataset(ds.root, version=one.version).num_rows == 10_000  # time travel keeps its vectors
    assert [h["operation"] for h in two.history()][-2:] == ["delete", "optimize"]
    two.vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert os.listdir(dv_dir) == []  # no retained version names it any more
    assert rcfmt.dataset(ds.root).read().num_rows == 10_000


def test_optimize_threshold_rewrites_only_worn_partitions(tmp_path):
    t = pa.table({"p": pa.array([0] * 100 + [1] * 100, pa.int32()), "k": np.arange(200)})
    ds = rcfmt.write_dataset(t, str(tmp_path / "d"), partition_by=["p"])
    ds = ds.delete((col("p") == 0) & (col("k") < 50)).delete((col("p") == 1) & (col("k") < 105))
    out = ds.optimize(deleted_threshold=0.3)
    files = {f.partition["p"]: f.relpath for f in out.files}
    assert files[1] in {f.relpath for f in ds.files}  # 5% deleted: left with its vector
    assert out.num_deleted_rows == 5 and out.num_rows == 145


# ------------------------------------------------------------------ concurrency
def test_concurrent_deletes_of_one_file_both_land(lineitem_like):
    ds, _ = lineitem_like
    a = ds.delete(col("k") == 1)
    b = ds.delete(col("k") == 2)  # planned on the old version: conflicts, runs again on the latest
    assert b.version == a.version + 1
    assert rcfmt.dataset(ds.root).read(filter=col("k") < 4).column("k").to_pylist() == [0, 3]


def test_append_concurrent_with_a_delete_both_land(lineitem_like):
    ds, _ = lineitem_like
    rcfmt.write_dataset(pa.table({"k": pa.array([-1], pa.int64()), "v": [0.0], "s": ["x"]}), ds.root)
    out = ds.delete(col("k") < 100)  # based on the version before the append: rebases onto it
    assert out.num_rows == 20_000 - 100 + 1
    assert out.read(filter=col("k") < 100).column("k").to_pylist() == [-1]


def test_optimize_planned_before_a_delete_does_not_resurrect_rows(lineitem_like, monkeypatch):
    ds, _ = lineitem_like
    from rcfmt.dataset import commits

    real = commits.commit_version
    deleted = []

    def commit_after_a_delete(*args, **kwargs):
        if kwargs.get("mode") == "rewrite" and not deleted:
            deleted.append(rcfmt.dataset(ds.root).delete(col("k") == 7))
        return real(*args, **kwargs)

    monkeypatch.setattr(commits, "commit_version", commit_after_a_delete)
    monkeypatch.setattr("rcfmt.dataset.optimize.commit", lambda *a, **k: commit_after_a_delete(*a, **k)[0])
    with pytest.raises(rcfmt.CommitConflictError, match="deleted rows"):
        ds.optimize(["v"], force=True)
    assert rcfmt.dataset(ds.root).read(filter=col("k") == 7).num_rows == 0


# ------------------------------------------------------------------ forged vectors
def _forge(root: str, **changes) -> None:
    """Rewrite the rows the latest index version stores (all of them, or its change)
    with their deletion-vector columns changed (each function gets the column and, per
    row, whether the file has a vector)."""
    from rcfmt.dataset import log
    from index_forgery import edit_version_rows

    def edit(table):
        has = [bool(n) for n in table.column("deleted_rows").to_pylist()]
        for name, fn in changes.items():
            i = table.schema.get_field_index(name)
            table = table.set_column(i, table.schema.field(i), fn(table.column(name), has))
        return table

    edit_version_rows(root, log.latest_version(root), edit)


@pytest.mark.parametrize("forgery", ["crc", "count", "past_end", "huge_size", "path", "count_over_rows"])
def test_forged_vectors_are_corrupt_files(lineitem_like, forgery):
    ds, _ = lineitem_like
    out = ds.delete(col("k").isin(list(range(0, 5000, 3))))  # file 0 only (a vector in a deletion file)
    dv = next(v for v in out.snapshot.vectors() if v is not None)
    change = {
        "crc": {"dv_crc32": lambda c, has: pc.add(c, 1)},
        "count": {"deleted_rows": lambda c, has: pa.array([v - 1 if v else 0 for v in c.to_pylist()], pa.int64())},
        "huge_size": {"dv_size": lambda c, has: pa.array([1 << 40 if h else 0 for h in has], pa.int64())},
        "path": {"dv_path": lambda c, has: pa.array(["../../etc/passwd" if h else None for h in has])},
        "count_over_rows": {"deleted_rows": lambda c, has: pa.array([10 ** 9 if h else 0 for h in has], pa.int64())},
    }.get(forgery)
    if forgery == "past_end":  # a valid vector (right checksum) naming rows the file lacks
        from rcfmt.dataset import deletion_vector

        data = deletion_vector.encode(np.array([1, 5000 + 3], np.int64))
        import zlib

        change = {"dv_inline": lambda c, has: pa.array([data if h else None for h in has], pa.binary()),
                  "dv_path": lambda c, has: pa.array([None] * len(c), pa.string()),
                  "dv_size": lambda c, has: pa.array([len(data) if h else 0 for h in has], pa.int64()),
                  "dv_crc32": lambda c, has: pa.array([zlib.crc32(data) if h else 0 for h in has], pa.int64()),
                  "deleted_rows": lambda c, has: pa.array([2 if h else 0 for h in has], pa.int64())}
    assert dv.cardinality == len(range(0, 5000, 3))
    _forge(out.root, **change)
    with pytest.raises(rcfmt.CorruptFileError):
        ds2 = rcfmt.dataset(out.root)
        ds2.read()


def test_a_missing_deletion_file_is_corrupt(lineitem_like):
    ds, _ = lineitem_like
    out = ds.delete(col("k").isin(list(range(0, 5000, 3))))
    shutil.rmtree(os.path.join(out.root, "_rcfmt", "deletions"))
    with pytest.raises(rcfmt.CorruptFileError, match="missing"):
        rcfmt.dataset(out.root).read()
    assert rcfmt.dataset(out.root).count_rows() == out.num_rows  # (the index alone still counts)


# ------------------------------------------------------------------ fresh interpreter
def test_delete_then_read_in_a_fresh_interpreter(lineitem_like):
    import subprocess
    import sys

    ds, _ = lineitem_like
    ds.delete(col("k") >= 100)
    code = (f"import rcfmt; d = rcfmt.dataset({ds.root!r}); t = d.read(); "
            f"assert t.num_rows == 100 == d.count_rows(), t.num_rows; "
            f"assert d.take([99]).column('k').to_pylist() == [99]; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


def test_the_worked_example_of_dataset_md():
    """docs/DATASET.md §3.4: the bytes of rows 3, 7 and 65536-65539, and their entry."""
    import re
    import zlib

    from rcfmt.dataset import deletion_vector

    doc = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "DATASET.md")).read()
    block = doc.split("Worked example: rows 3, 7 and 65536-65539")[1].split("```")[1]
    documented = bytes.fromhex(" ".join(re.match(r"((?:[0-9a-f]{2} )*[0-9a-f]{2})?", line).group(0) or ""
                                        for line in block.splitlines()))
    data = deletion_vector.encode(np.array([3, 7, 65536, 65537, 65538, 65539], np.int64))
    assert data == documented and len(data) == 35
    assert f"`dv_crc32` {zlib.crc32(data)}" in doc
    assert deletion_vector.encode(np.arange(100, 5100)).__len__() == 27


def test_racing_deletes_and_appends_from_threads_lose_nothing(lineitem_like):
    """Four threads delete disjoint scattered rows of the same files while two append:
    every delete and every append lands (conflicting deletes are planned again)."""
    from concurrent.futures import ThreadPoolExecutor

    ds, _ = lineitem_like
    sets = [list(range(k, 20_000, 97)) for k in range(4)]

    def delete(rows):
        return rcfmt.dataset(ds.root).delete(col("k").isin(rows)).version

    def append(k):
        extra = pa.table({"k": pa.array([-1 - k], pa.int64()), "v": [0.0], "s": ["new"]})
        return rcfmt.write_dataset(extra, ds.root).version

    with ThreadPoolExecutor(6) as pool:
        versions = list(pool.map(delete, sets)) + list(pool.map(append, range(2)))
    assert len(set(versions)) == 6
    got = rcfmt.dataset(ds.root).read(["k"]).column("k").to_pylist()
    gone = {k for rows in sets for k in rows}
    assert sorted(got) == [-2, -1] + [k for k in range(20_000) if k not in gone]


def test_pages_whose_rows_are_all_deleted_are_not_read(tmp_path):
    """Deleted rows leave each block's candidates before any read: a filtered scan reads
    only pages holding a row left, for its filter and its projection alike."""
    t = pa.table({"k": np.arange(4096, dtype=np.int64), "v": np.arange(4096) * 0.5})
    ds = rcfmt.write_dataset(t, str(tmp_path / "d"), block_rows=4096, page_rows=256, compression="none")
    before = ds.scan(["v"], col("k") < 2048)
    assert before.read().num_rows == 2048
    out = ds.delete(col("k") < 1024)  # the first 4 pages of each column
    after = out.scan(["v"], col("k") < 2048)
    assert after.read().column("v").to_pylist() == [k * 0.5 for k in range(1024, 2048)]
    assert before.stats.pages_read == 16 and after.stats.pages_read == 8
    assert after.stats.rows_decoded <= 2 * 1024


def test_polars_duckdb_and_pandas_see_the_rows_left(tmp_path):
    import duckdb
    import polars as pl

    from rcfmt.polars import scan_rcfmt

    root = str(tmp_path / "d")
    ds = rcfmt.write_dataset(pa.table({"k": np.arange(1000), "v": np.arange(1000) * 1.0}), root, target_file_rows=300)
    ds = ds.delete(col("k").isin(list(range(0, 1000, 2))))
    odd = list(range(1, 1000, 2))
    lf = scan_rcfmt(root)
    assert lf.select(pl.len()).collect().item() == 500
    assert lf.filter(pl.col("k") < 10).collect()["k"].to_list() == odd[:5]
    assert pl.DataFrame(ds)["k"].to_list() == odd
    scan = ds.scan()
    assert duckdb.connect().sql("select count(*), sum(k) from scan").fetchall() == [(500, sum(odd))]
    assert ds.read().to_pandas()["k"].tolist() == odd


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=st.data(), defer=st.sampled_from([0, 10 ** 9]))
def test_deleted_rows_taken_out_before_or_after_the_filter_alike(tmp_path_factory, monkeypatch, data, defer):
    """Blocks with few deleted rows decide the filter on their candidates and take the
    deleted rows out of the answer after (planner.DEFER_DELETED); forced either way
    (0: always after, 10**9: always before), reads and counts are the oracle's, through
    the native filter that picks rows, the mask path and the projection in its call."""
    from rcfmt.scan import planner

    monkeypatch.setattr(planner, "DEFER_DELETED", defer)
    n = data.draw(st.integers(1, 300))
    table = _rows(data.draw, list(range(n)))
    root = str(tmp_path_factory.mktemp("defer") / "d")
    ds = rcfmt.write_dataset(table, root, block_rows=64, page_rows=16)
    gone = data.draw(st.lists(st.integers(0, n - 1), unique=True, max_size=max(1, n // 4)))
    if gone:
        ds = ds.delete(col("id").isin(gone))
    left = table.filter(pa.array(~np.isin(np.arange(n), gone)))
    expr = data.draw(filters())
    want = left.filter(pa.array(selection_mask(expr, left)))
    columns = data.draw(st.sampled_from([None, ["id"], ["x", "s"], ["g"]]))
    got = ds.read(columns, filter=expr)
    assert _identical(got, want.select(got.column_names))
    assert ds.count_rows(expr) == want.num_rows


def test_the_cli_reads_rows_left_and_lists_deleted_rows_per_file(tmp_path, capsys):
    from rcfmt.cli import main

    root = str(tmp_path / "d")
    ds = rcfmt.write_dataset(pa.table({"k": np.arange(100)}), root, target_file_rows=40)
    ds.delete(col("k") < 5).update(col("k") == 50, {"k": 500})
    assert main(["head", "-n", "3", root]) == 0
    assert [line.split()[-1] for line in capsys.readouterr().out.strip().splitlines()[-3:]] == ["5", "6", "7"]
    assert main(["inspect", root]) == 0
    out = capsys.readouterr().out
    assert "rows:    95 (6 more deleted by deletion vectors)" in out
    assert [line.split()[:2] for line in out.splitlines() if line.strip().endswith("-00000.rcfmt")
            or line.strip().endswith("-00001.rcfmt")] == [["5", "40"], ["1", "40"]]
    assert "-5" in out and "~1" in out
    assert main(["history", root]) == 0
    assert "rows_deleted" in capsys.readouterr().out


@pytest.mark.parametrize("key_type", [pa.float64(), pa.float32(), pa.float16()])
def test_merge_keys_follow_sql_equality_for_signed_zeros(tmp_path, key_type):
    """-0.0 and 0.0 are one key, as ``==`` and ``isin`` (and DuckDB's MERGE) take them: an
    upsert of -0.0 updates the 0.0 row (and the reverse), a matched delete removes it, a
    source holding both is refused as a repeated key; a NULL target key matches nothing;
    NaN keys match each other, as ``isin`` does."""
    import duckdb

    np_type = key_type.to_pandas_dtype()

    def keys(*values):
        return pa.array([None if v is None else np_type(v) for v in values], key_type)

    target = pa.table({"k": keys(0.0, 1.0, None, float("nan")), "v": ["zero", "one", "null", "nan"]})
    for source_key, stored in ((-0.0, 0.0), (0.0, -0.0)):
        root = tmp_path / f"up{source_key}"
        rcfmt.write_dataset(target.set_column(0, "k", keys(stored, 1.0, None, float("nan"))), root)
        source = pa.table({"k": keys(source_key, float("nan")), "v": ["SOURCE", "NAN"]})
        got = rcfmt.dataset(root).merge(source, on="k", when_matched="update", when_not_matched="insert")
        rows = sorted(got.read().to_pylist(), key=lambda r: r["v"])
        assert [r["v"] for r in rows] == ["NAN", "SOURCE", "null", "one"], rows
        assert got.read(filter=col("k") == 0.0).column("v").to_pylist() == ["SOURCE"]
        con = duckdb.connect()
        con.execute("CREATE TABLE t (k DOUBLE, v VARCHAR)")
        con.execute("INSERT INTO t VALUES (?, 'zero'), (1.0, 'one')", [stored])
        con.register("s", source.slice(0, 1).cast(pa.schema([("k", pa.float64()), ("v", pa.string())])))
        con.execute("MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v "
                    "WHEN NOT MATCHED THEN INSERT VALUES (s.k, s.v)")
        assert sorted(v for _, v in con.execute("SELECT k, v FROM t").fetchall()) == ["SOURCE", "one"]
    root = tmp_path / "delete"
    rcfmt.write_dataset(target, root)
    got = rcfmt.dataset(root).merge(pa.table({"k": keys(-0.0, None)}), on="k", when_matched="delete",
                                    when_not_matched=None)
    assert sorted(got.read().column("v").to_pylist()) == ["nan", "null", "one"]
    with pytest.raises(rcfmt.InvalidDataError, match="more than once"):
        rcfmt.dataset(root).merge(pa.table({"k": keys(0.0, -0.0), "v": ["a", "b"]}), on="k")


@pytest.mark.parametrize("key_type", [pa.float64(), pa.float32()])
def test_merge_nan_keys_match_whatever_their_bits(tmp_path, key_type):
    """A NaN of another sign or payload (x86's inf - inf is -NaN) is the same key, as
    ``isin`` takes it: an upsert updates the NaN row, a matched delete removes it, a
    source holding two NaNs repeats a key (Arrow's join compares the bits)."""
    width = np.float64 if key_type == pa.float64() else np.float32
    bits = np.uint64 if width is np.float64 else np.uint32
    top = np.array([1], bits) << bits(8 * np.dtype(width).itemsize - 1)
    negative_nan = (np.array([np.nan], width).view(bits) | top).view(width)  # the sign bit set
    payload_nan = (np.array([np.nan], width).view(bits) | bits(1)).view(width)
    for other in (negative_nan, payload_nan):
        root = tmp_path / f"ds{other.view(bits)[0]}"
        rcfmt.write_dataset(pa.table({"k": pa.array([np.nan, 2.0], key_type), "v": [1, 2]}), root)
        assert rcfmt.dataset(root).read(filter=col("k").isin([float(other[0])])).num_rows == 1
        got = rcfmt.dataset(root).merge(pa.table({"k": pa.array(other, key_type), "v": [10]}), on="k")
        assert sorted(got.read().column("v").to_pylist()) == [2, 10]
        got = got.merge(pa.table({"k": pa.array(other, key_type)}), on="k", when_matched="delete",
                        when_not_matched=None)
        assert got.read().column("v").to_pylist() == [2]
        with pytest.raises(rcfmt.InvalidDataError, match="more than once"):
            got.merge(pa.table({"k": pa.array(np.concatenate([other, [np.nan]]), key_type), "v": [1, 2]}), on="k")


def _ints(values, t):
    return pa.array(values, pa.int64()).cast(t)


@pytest.mark.parametrize("keys", [
    pa.array([dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)],
             pa.timestamp("us", "America/New_York")),  # (year 0 in New York: no Python datetime)
    _ints([253402300800, 0], pa.timestamp("s")),  # year 10000
    _ints([-2**63, 0], pa.timestamp("ns")),  # numpy's NaT, a valid Arrow instant
    _ints([-2**63, 0], pa.duration("ns")),
    pa.array([2932897, 0], pa.int32()).cast(pa.date32()),  # past year 9999
    _ints([2**62, 0], pa.duration("s")),
    pa.array([decimal.Decimal("1.1"), decimal.Decimal("2")], pa.decimal32(5, 2)),  # (no unique kernel)
    pa.array([decimal.Decimal("1.1"), decimal.Decimal("2")], pa.decimal64(15, 2)),
], ids=lambda a: str(a.type))
def test_merge_keys_beyond_python_values(tmp_path, keys):
    """The candidate filter of a merge's keys is made of Arrow scalars (their values went
    through Python's dates and datetimes, which raised OverflowError, or NaT)."""
    ds = rcfmt.write_dataset(pa.table({"k": keys, "v": [0, 1]}), tmp_path / "ds")
    got = ds.merge(pa.table({"k": keys.slice(0, 1), "v": [100]}), on="k")
    assert sorted(got.read().column("v").to_pylist()) == [1, 100]
    got = got.merge(pa.table({"k": keys.slice(0, 1)}), on="k", when_matched="delete", when_not_matched=None)
    assert got.read().column("v").to_pylist() == [1]
