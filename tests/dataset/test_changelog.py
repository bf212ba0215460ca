"""Incremental index versions (issue 63, docs/DATASET.md §4.2): a version records its
changes, checkpoints hold the complete index, runs are merged in levels. Every version
read from checkpoint + runs + changes must equal the complete index its writer had in
memory when it committed it (built by the commit's own code, which shares nothing with
the chain's reconstruction), under random sequences of appends, deletes, updates,
merges, optimizes, checkpoints, schema changes and vacuums; forged chains are corrupt
files; old complete-index datasets are read and committed to."""
from __future__ import annotations

import json
import os
import threading

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import initialize, invariant, rule

import rcfmt
from rcfmt.dataset import changelog, commits, log
from rcfmt.dataset import snapshot as dataset_snapshot
from rcfmt.dataset.index import INDEX_METADATA_KEY
from rcfmt.dataset.snapshot import read_snapshot

from index_forgery import edit_version_rows, every_version_a_checkpoint
from dataset.test_row_changes import WRITE, RowChanges


def _cold() -> None:
    """Forget what this process keeps of versions and runs (a reader in another process)."""
    dataset_snapshot._COMMITTED.clear()
    dataset_snapshot._RUNS.clear()
    dataset_snapshot._CHAINS.clear()


def _layout(root: str, version: int) -> str:
    with rcfmt.open(log.version_path(root, version)) as f:
        return changelog.layout_of(json.loads(f.metadata[INDEX_METADATA_KEY]))


def _runs(info: dict) -> list[dict]:
    return changelog.runs_of(info) if info.get("layout") == changelog.CHANGES else []


def _batch(i: int, rows: int = 3) -> pa.Table:
    return pa.table({"id": pa.array(range(i * rows, (i + 1) * rows), pa.int64()),
                     "s": pa.array([f"name-{i}-{j}" for j in range(rows)])})


@pytest.fixture
def small_levels(monkeypatch):
    """Runs merged two by two, a checkpoint once a chain changes 8 rows and its
    checkpoint's size: levels and checkpoints within a few dozen commits."""
    monkeypatch.setattr(changelog, "MERGE_FANOUT", 2)
    monkeypatch.setattr(changelog, "CHECKPOINT_MIN_ROWS", 8)
    monkeypatch.setattr(changelog, "CHECKPOINT_FRACTION", 1.0)


# ------------------------------------------------------------------ the state machine
class IndexLog(RowChanges):
    """RowChanges with small levels, checkpoints and schema evolution added, and after
    every step every retained version's index read cold compared with the complete
    index its writer committed."""

    @initialize(data=st.data(), fanout=st.integers(2, 3), min_rows=st.integers(0, 12),
                fraction=st.sampled_from([0.25, 1.0, 4.0]))
    def start(self, data, fanout, min_rows, fraction):
        self._saved = (changelog.MERGE_FANOUT, changelog.CHECKPOINT_MIN_ROWS, changelog.CHECKPOINT_FRACTION,
                       commits.remember_committed)
        changelog.MERGE_FANOUT, changelog.CHECKPOINT_MIN_ROWS, changelog.CHECKPOINT_FRACTION = \
            fanout, min_rows, fraction
        self.complete = {}  # version -> the complete index its writer committed
        real = self._saved[3]

        def remember(root, version, size, table, info_json):
            self.complete[version] = table.combine_chunks()
            return real(root, version, size, table, info_json)

        commits.remember_committed = remember
        self.extra = 0
        super().start(data)

    def teardown(self):
        (changelog.MERGE_FANOUT, changelog.CHECKPOINT_MIN_ROWS, changelog.CHECKPOINT_FRACTION,
         commits.remember_committed) = self._saved
        super().teardown()

    @rule()
    def checkpoint(self):
        ds = self.ds.checkpoint()
        assert _layout(self.root, ds.version) == changelog.CHECKPOINT
        self._committed(ds)

    @rule()
    def add_a_column(self):
        self.extra += 1
        self._committed(self.ds.evolve(add=[pa.field(f"extra{self.extra}", pa.int32())]))

    @rule(data=st.data())
    def append_with_a_new_column(self, data):
        """An append that brings a column of its own (the schemas merge): the chain's
        older rows are read under the wider schema."""
        rows = self._new(data, data.draw(st.integers(1, 20)))
        self.oracle = pa.concat_tables([self.oracle, rows])
        self.extra += 1
        wide = rows.append_column(f"extra{self.extra}", pa.array(range(rows.num_rows), pa.int64()))
        self._committed(rcfmt.write_dataset(wide, self.root, **WRITE))

    @invariant()
    def every_version_reads_as_its_complete_index(self):
        _cold()
        for version in log.list_versions(self.root):
            if version not in self.complete:
                continue
            got = read_snapshot(self.root, version, columns=None).table
            want = self.complete[version]
            assert got.schema == want.schema, version
            assert got.equals(want), version
            # a reader loading only some statistics columns gets the same values
            part = read_snapshot(self.root, version, columns=[])
            stats = [n for n in want.column_names if n.startswith("id.")]
            part.load_stats(["id"])
            part.value_sets("id")  # (loads id.values)
            for name in ["path", "num_rows", "deleted_rows", *stats]:
                assert part.table.column(name).equals(want.column(name)), (version, name)


IndexLog.TestCase.settings = settings(max_examples=15, stateful_step_count=14, deadline=None,
                                      suppress_health_check=[HealthCheck.too_slow])
test_index_log_against_complete_indexes = IndexLog.TestCase


# ------------------------------------------------------------------ layout and sizes
def test_appends_write_changes_and_chains_merge_into_levels(tmp_path, small_levels):
    root = str(tmp_path / "d")
    for i in range(40):
        rcfmt.write_dataset(_batch(i), root)
    layouts = [_layout(root, v) for v in range(1, 41)]
    assert layouts[0] == changelog.CHECKPOINT and changelog.CHANGES in layouts
    checkpoints = [v for v, kind in zip(range(1, 41), layouts) if kind == changelog.CHECKPOINT]
    assert len(checkpoints) >= 3  # geometric: 8, then the size of the table
    gaps = np.diff(checkpoints)
    assert (gaps[1:] >= gaps[:-1]).all(), checkpoints  # checkpoints get rarer as the table grows
    runs = os.listdir(os.path.join(root, "_rcfmt", "runs"))
    assert runs and all(changelog.RUN in r or r.startswith("r") for r in runs)
    for v in range(1, 41):  # every version, cold, reads its rows
        _cold()
        assert sorted(rcfmt.dataset(root, version=v).read(["id"]).column("id").to_pylist()) == list(range(3 * v))
    info = rcfmt.dataset(root).info
    if info.get("layout") == changelog.CHANGES:  # at most fanout - 1 runs per level
        levels = [r["level"] for r in _runs(info)]
        assert all(levels.count(level) < 2 for level in set(levels)), levels


def test_a_changes_version_of_a_wide_table_is_small(tmp_path):
    """Issue 63's target: an append of one file writes under 16 KB to _rcfmt/ at any
    version, for lineitem's 16 columns (146 index columns)."""
    root = str(tmp_path / "d")
    rng = np.random.default_rng(0)

    def batch(i):
        n = 200
        return pa.table({
            **{f"k{j}": pa.array(rng.integers(0, 10**9, n)) for j in range(4)},
            **{f"d{j}": pa.array(rng.random(n)) for j in range(4)},
            **{f"s{j}": pa.array([f"text-{v}" for v in rng.integers(0, 10**6, n)]) for j in range(4)},
            **{f"t{j}": pa.array(rng.integers(0, 10**6, n).astype("datetime64[s]")) for j in range(2)},
            "flag": pa.array(rng.random(n) < 0.5), "c": pa.array(rng.integers(0, 9, n).astype(np.int8)),
        })

    for i in range(30):
        rcfmt.write_dataset(batch(i), root)
    with rcfmt.open(log.version_path(root, 1)) as f:
        assert len(f.schema.names) >= 120  # the complete index: one column per statistic
    for v in range(2, 31):
        assert _layout(root, v) == changelog.CHANGES
        assert os.path.getsize(log.version_path(root, v)) < 16 * 1024, v
    assert rcfmt.dataset(root).num_rows == 30 * 200


def test_overwrite_evolve_optimize_and_checkpoint_write_complete_indexes(tmp_path):
    root = str(tmp_path / "d")
    rcfmt.write_dataset(_batch(0), root)
    rcfmt.write_dataset(_batch(1), root)
    assert _layout(root, 2) == changelog.CHANGES
    ds = rcfmt.dataset(root).checkpoint()
    assert ds.version == 3 and _layout(root, 3) == changelog.CHECKPOINT and ds.info["operation"] == "checkpoint"
    assert ds.num_rows == 6 and ds.info["added_files"] == 0
    rcfmt.write_dataset(_batch(2), root)
    assert rcfmt.dataset(root).optimize().version == 5 and _layout(root, 5) == changelog.CHECKPOINT
    assert rcfmt.dataset(root).evolve(add=[pa.field("z", pa.int8())]).version == 6
    assert _layout(root, 6) == changelog.CHECKPOINT
    rcfmt.write_dataset(_batch(3), root, mode="overwrite")
    assert _layout(root, 7) == changelog.CHECKPOINT
    rcfmt.write_table(_batch(0), tmp_path / "plain.rcfmt")
    with pytest.raises(rcfmt.InvalidOptionError, match="no index"):
        rcfmt.dataset(str(tmp_path / "plain.rcfmt")).checkpoint()


def test_history_time_travel_and_a_reader_that_predates_changes(tmp_path, monkeypatch):
    root = str(tmp_path / "d")
    for i in range(5):
        rcfmt.write_dataset(_batch(i), root)
    history = rcfmt.dataset(root).history()
    assert [h["version"] for h in history] == [1, 2, 3, 4, 5]
    assert [h.get("layout", "checkpoint") for h in history] == ["checkpoint"] + ["changes"] * 4
    _cold()
    for v in range(1, 6):
        assert rcfmt.dataset(root, version=v).num_rows == 3 * v
    monkeypatch.setattr(dataset_snapshot, "FORMAT_VERSION", 2)  # a reader of rcfmt before changes versions
    _cold()
    with pytest.raises(rcfmt.RcfmtError, match="format version 3 is newer"):
        rcfmt.dataset(root)
    assert rcfmt.dataset(root, version=1).num_rows == 3  # the checkpoint it can read


def test_a_dataset_of_complete_indexes_is_read_and_committed_to(tmp_path, monkeypatch):
    """Datasets written before changes versions (every version complete) stay readable and
    their next commit starts a chain from their latest version."""
    root = str(tmp_path / "d")
    with monkeypatch.context() as m:
        every_version_a_checkpoint(m)
        for i in range(4):
            rcfmt.write_dataset(_batch(i), root)
    assert {_layout(root, v) for v in range(1, 5)} == {changelog.CHECKPOINT}
    _cold()
    out = rcfmt.write_dataset(_batch(4), root)
    assert _layout(root, 5) == changelog.CHANGES and out.info["checkpoint"]["version"] == 4
    _cold()
    assert sorted(rcfmt.dataset(root).read(["id"]).column("id").to_pylist()) == list(range(15))


def test_one_read_of_each_object_per_open(tmp_path, small_levels, monkeypatch):
    from rcfmt.file import reader

    root = str(tmp_path / "d")
    for i in range(13):
        rcfmt.write_dataset(_batch(i), root)
    opened = []
    real = reader.RcfmtFile.__init__

    def counted(self, source, *a, **k):
        opened.append(os.path.basename(str(source)))
        return real(self, source, *a, **k)

    monkeypatch.setattr(reader.RcfmtFile, "__init__", counted)
    _cold()
    ds = rcfmt.dataset(root)
    assert ds.num_rows == 39
    assert len(opened) == len(set(opened)), opened  # no object read twice
    info = ds.info
    want = {os.path.basename(r["path"]) for r in _runs(info)} | {os.path.basename(
        log.version_path(root, ds.version))}
    if info.get("layout") == changelog.CHANGES:
        want.add(os.path.basename(log.version_path(root, info["checkpoint"]["version"])))
    assert set(opened) == want
    opened.clear()
    rcfmt.dataset(root)  # warm: the runs come from this process's cache
    assert set(opened) <= {os.path.basename(log.version_path(root, ds.version)),
                           os.path.basename(log.version_path(root, info.get("checkpoint", {}).get("version", 0)))}


# ------------------------------------------------------------------ vacuum
def test_vacuum_keeps_the_chain_of_the_oldest_kept_version(tmp_path, small_levels):
    root = str(tmp_path / "d")
    for i in range(30):
        rcfmt.write_dataset(_batch(i), root)
    ds = rcfmt.dataset(root)
    removed = ds.vacuum(retention_seconds=0, enforce_retention_duration=False)
    versions = log.list_versions(root)
    start = ds.info["checkpoint"]["version"] if ds.info.get("layout") == changelog.CHANGES else ds.version
    assert versions == list(range(start, 31))
    assert all(log.version_path(root, v) in removed for v in range(1, start))
    runs = set(os.listdir(os.path.join(root, "_rcfmt", "runs")))  # those a kept version names, no other
    assert runs == {os.path.basename(r["path"]) for v in versions for r in _runs(read_snapshot(root, v).info)
                    if "/runs/" in r["path"]}
    _cold()
    assert sorted(rcfmt.dataset(root).read(["id"]).column("id").to_pylist()) == list(range(90))
    ds = ds.checkpoint()  # then everything before it can go
    ds.vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert log.list_versions(root) == [ds.version] and not os.listdir(os.path.join(root, "_rcfmt", "runs"))
    _cold()
    assert rcfmt.dataset(root).num_rows == 90


def test_a_lost_race_removes_the_runs_it_merged(tmp_path, small_levels, monkeypatch):
    root = str(tmp_path / "d")
    for i in range(3):
        rcfmt.write_dataset(_batch(i), root)
    real = log.publish_version
    raced = []

    def lose_once(r, version, tmp):
        if not raced:  # another writer takes this version first
            raced.append(version)
            rcfmt.write_dataset(_batch(100), root)
        return real(r, version, tmp)

    monkeypatch.setattr(log, "publish_version", lose_once)
    dataset_snapshot._COMMITTED.clear()
    rcfmt.write_dataset(_batch(3), root)
    monkeypatch.setattr(log, "publish_version", real)
    ds = rcfmt.dataset(root)
    assert ds.version == 5 and ds.num_rows == 15
    named = {os.path.basename(r["path"]) for v in log.list_versions(root)
             for r in _runs(read_snapshot(root, v).info) if "/runs/" in r["path"]}
    assert set(os.listdir(os.path.join(root, "_rcfmt", "runs"))) == named  # no orphan of the lost attempt


def test_concurrent_appends_with_merges_lose_nothing(tmp_path, small_levels):
    root = str(tmp_path / "d")
    rcfmt.write_dataset(_batch(0), root)
    errors = []

    def writer(k):
        try:
            for i in range(6):
                rcfmt.write_dataset(_batch(1 + k * 6 + i), root)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    _cold()
    ds = rcfmt.dataset(root)
    assert ds.version == 19 and sorted(ds.read(["id"]).column("id").to_pylist()) == list(range(57))
    for v in range(1, 20):
        _cold()
        assert rcfmt.dataset(root, version=v).num_rows == 3 * v


# ------------------------------------------------------------------ forged chains
@pytest.fixture
def chain(tmp_path, small_levels):
    root = str(tmp_path / "d")
    for i in range(7):
        rcfmt.write_dataset(_batch(i), root)
    info = rcfmt.dataset(root).info
    assert info["layout"] == changelog.CHANGES and any("/runs/" in r["path"] for r in _runs(info))
    _cold()
    return root


def _edit_info(root: str, version: int, edit) -> str:
    path = log.version_path(root, version)
    with rcfmt.open(path) as f:
        table, meta = f.read(), dict(f.metadata)
    info = json.loads(meta[INDEX_METADATA_KEY])
    edit(info)
    os.unlink(path)
    rcfmt.write_table(table, path, metadata={INDEX_METADATA_KEY: json.dumps(info)})
    return path


@pytest.mark.parametrize("forgery", [
    lambda i: i["runs"].pop(0),                                      # a gap
    lambda i: i["runs"].append(list(i["runs"][-1])),                  # an overlap
    lambda i: i["checkpoint"].update(version=i["version"]),           # itself
    lambda i: i["checkpoint"].update(version=i["version"] + 5),       # the future
    lambda i: i["checkpoint"].update(version="1"),                    # mistyped
    lambda i: i.pop("runs"),
    lambda i: i["runs"][0].__setitem__(4, "../../../outside.rcfmt"),
    lambda i: i["runs"][0].__setitem__(4, "r1-2-x.rcfmt"),             # not a run's name
    lambda i: i["runs"][0].__setitem__(3, i["runs"][0][3] + 1),        # not the object written
    lambda i: i["runs"][-1].__setitem__(0, i["runs"][-1][0] - 1),
    lambda i: i["runs"][-1].__setitem__(1, i["runs"][-1][1] + 1),      # a version's own, two versions
    lambda i: i["runs"][0].pop(),                                      # a merged run without a name
    lambda i: i.update(layout="journal"),
], ids=["gap", "overlap", "self", "future", "mistyped", "no-runs", "outside", "bad-name", "size", "range",
        "level0-range", "unnamed", "layout"])
def test_forged_chains_are_corrupt_files(chain, forgery):
    version = log.latest_version(chain)
    _edit_info(chain, version, forgery)
    with pytest.raises(rcfmt.CorruptFileError, match=f"dataset index version {version}"):
        rcfmt.dataset(chain).read()


def test_a_checkpoint_that_is_a_changes_version_is_refused(chain):
    version = log.latest_version(chain)
    _edit_info(chain, version, lambda i: (i["checkpoint"].update(version=version - 1), i.update(runs=[])))
    with pytest.raises(rcfmt.CorruptFileError, match="not one"):
        rcfmt.dataset(chain)


@pytest.mark.parametrize("forgery", ["garbage", "types", "duplicate", "holds-and-removes", "columns"])
def test_forged_change_rows_are_corrupt_files(chain, forgery):
    version = log.latest_version(chain)
    path = log.version_path(chain, version)
    with rcfmt.open(path) as f:
        table, meta = f.read(), dict(f.metadata)
    change = changelog.read_change(table, path)
    rows, removed = change.rows, change.removed
    if forgery == "garbage":
        table = table.set_column(0, table.schema.field(0), pa.array([b"\xff" * 64], pa.large_binary()))
    else:
        if forgery == "types":
            i = rows.schema.get_field_index("num_rows")
            rows = rows.set_column(i, "num_rows", rows.column(i).cast(pa.float64()))
        elif forgery == "duplicate":
            rows = pa.concat_tables([rows, rows])
        elif forgery == "holds-and-removes":
            removed = rows.column("path").combine_chunks()
        elif forgery == "columns":
            rows = rows.append_column("nonsense.min", pa.array([1] * rows.num_rows))
        table = changelog.change_table(changelog.Change(rows, removed))
    os.unlink(path)
    rcfmt.write_table(table, path, metadata=meta)
    with pytest.raises(rcfmt.CorruptFileError, match=f"dataset index version {version}"):
        rcfmt.dataset(chain).read()


def test_forged_vectors_in_a_run_are_corrupt_files(chain):
    info = rcfmt.dataset(chain).info
    level0 = next(r for r in _runs(info) if r["level"] == 0)

    def forge(rows):
        i = rows.schema.get_field_index("deleted_rows")
        return rows.set_column(i, rows.schema.field(i), pa.array([10**9] * rows.num_rows, pa.int64()))

    edit_version_rows(chain, level0["first"], forge)
    _edit_info(chain, log.latest_version(chain),
               lambda i: [r.__setitem__(3, os.path.getsize(log.version_path(chain, r[0])))
                          for r in i["runs"] if r[2] == 0 and r[0] == level0["first"]])
    _cold()
    with pytest.raises(rcfmt.CorruptFileError, match="deleted rows"):
        rcfmt.dataset(chain).read()


def test_a_missing_run_or_checkpoint_is_a_corrupt_file_or_os_error(chain):
    info = rcfmt.dataset(chain).info
    run = next(r for r in _runs(info) if "/runs/" in r["path"])
    os.unlink(os.path.join(chain, *run["path"].split("/")))
    _cold()
    with pytest.raises((rcfmt.RcfmtError, OSError)):
        rcfmt.dataset(chain, version=info["version"]).read()


# ------------------------------------------------------------------ object storage
def test_s3_chains_merge_and_vacuum(small_levels):
    pytest.importorskip("moto.server")
    pytest.importorskip("boto3")
    from local_s3 import s3_server

    with s3_server("changelog") as (endpoint, _):
        uri = "s3://changelog/ds"
        for i in range(20):
            rcfmt.write_dataset(_batch(i), uri)
        ds = rcfmt.dataset(uri)
        assert ds.info.get("layout") == changelog.CHANGES or ds.version == ds.info.get("version")
        _cold()
        from rcfmt.file.footer_cache import FOOTERS

        FOOTERS.clear()  # (every object read from the server again)
        for v in (1, 7, 13, 20):
            assert sorted(rcfmt.dataset(uri, version=v).read(["id"]).column("id").to_pylist()) == list(range(3 * v))
        ds.vacuum(retention_seconds=0, enforce_retention_duration=False)
        _cold()
        assert rcfmt.dataset(uri).num_rows == 60
        from rcfmt.storage import list_tree

        objects = [rel for rel, _ in list_tree(uri)]
        runs = {rel for rel in objects if rel.startswith("_rcfmt/runs/")}
        assert runs == {r["path"] for r in _runs(ds.info) if "/runs/" in r["path"]}


def test_the_worked_example_of_dataset_md(tmp_path, monkeypatch):
    """docs/DATASET.md §4.2: eighteen appends; version 18 merges versions 2-17 into one
    run of level 1 and is read from three objects."""
    from rcfmt.file import reader

    root = str(tmp_path / "d")
    for i in range(18):
        rcfmt.write_dataset(pa.table({"id": pa.array([2 * i, 2 * i + 1], pa.int64())}), root)
    assert _layout(root, 1) == changelog.CHECKPOINT
    v2 = read_snapshot(root, 2).info
    assert (v2["format_version"], v2["layout"], v2["runs"], v2["chain_rows"]) == (3, "changes", [], 1)
    assert v2["checkpoint"] == {"version": 1, "size": os.path.getsize(log.version_path(root, 1)), "files": 1}
    with rcfmt.open(log.version_path(root, 2)) as f:
        change = changelog.read_change(f.read(), "v2")
    assert change.rows.num_rows == 1 and len(change.removed) == 0 and change.rows.num_columns == 17
    assert len(_runs(read_snapshot(root, 17).info)) == 15
    v18 = read_snapshot(root, 18).info
    (run,) = _runs(v18)
    assert (run["first"], run["last"], run["level"], v18["chain_rows"]) == (2, 17, 1, 17)
    assert run["path"].startswith("_rcfmt/runs/r00000000000000000002-00000000000000000017-")
    with rcfmt.open(os.path.join(root, *run["path"].split("/"))) as f:
        assert changelog.read_change(f.read(), run["path"]).rows.num_rows == 16
    opened = []
    real = reader.RcfmtFile.__init__
    monkeypatch.setattr(reader.RcfmtFile, "__init__",
                        lambda self, source, *a, **k: opened.append(str(source)) or real(self, source, *a, **k))
    _cold()
    assert rcfmt.dataset(root).read().column("id").to_pylist() == list(range(36))
    index_objects = [p for p in opened if "_rcfmt" in p]
    assert sorted(os.path.basename(p) for p in index_objects) == sorted(
        [os.path.basename(log.version_path(root, 18)), os.path.basename(run["path"]),
         os.path.basename(log.version_path(root, 1))])


def test_the_caches_of_decoded_objects_are_bounded_in_bytes():
    """A process keeps decoded runs and chains within a byte bound: the least recently
    used go first, and an object larger than the bound is not kept."""
    cache = dataset_snapshot._RunCache(100, 1000, lambda item: item)
    for k in range(5):
        cache.put(k, 300)
    assert [cache.get(k) for k in range(5)] == [None, None, 300, 300, 300]
    cache.get(2)  # (used: kept over 3)
    cache.put(5, 300)
    assert cache.get(3) is None and cache.get(2) == 300
    cache.put(6, 5000)
    assert cache.get(6) is None and cache.get(2) == 300
    cache.put(2, 900)  # (replacing an entry frees its bytes)
    assert cache.get(4) is None and cache.get(5) is None and cache.get(2) == 900


def test_a_fresh_interpreter_reads_every_version_of_a_chain_from_threads(tmp_path, small_levels):
    """A user's first process: nothing cached; eight threads read versions of one chain
    at once (the caches of runs and chains are shared between them)."""
    import subprocess
    import sys

    root = str(tmp_path / "d")
    for i in range(24):
        rcfmt.write_dataset(_batch(i), root)
    assert _layout(root, 24) == changelog.CHANGES or _layout(root, 23) == changelog.CHANGES
    code = (
        "import sys, threading, rcfmt\n"
        "root = sys.argv[1]\n"
        "out = {}\n"
        "def read(v):\n"
        "    out[v] = sorted(rcfmt.dataset(root, version=v).read(['id']).column('id').to_pylist())\n"
        "threads = [threading.Thread(target=read, args=(v,)) for v in range(1, 25) for _ in range(2)]\n"
        "[t.start() for t in threads]\n"
        "[t.join() for t in threads]\n"
        "assert all(out[v] == list(range(3 * v)) for v in range(1, 25)), out\n"
        "print(rcfmt.dataset(root).count_rows(rcfmt.col('id') < 30))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, root], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "30"


def test_a_missing_part_of_a_chain_is_a_corrupt_dataset(tmp_path, small_levels):
    """A changes version is read with its checkpoint and runs: one of them gone (deleted
    by hand, lost in a copy) is a CorruptFileError naming the version that needs it, on
    every read path and in a fresh process's cache alike -- not a bare FileNotFoundError."""
    root = str(tmp_path / "ds")
    for i in range(6):
        rcfmt.write_dataset(pa.table({"id": [2 * i, 2 * i + 1]}), root, mode="append")
    meta = os.path.join(root, log.META_DIR)
    runs = os.path.join(meta, changelog.RUNS_DIR)
    assert os.listdir(runs), "the small levels merge runs"
    assert _layout(root, 6) == _layout(root, 5) == changelog.CHANGES
    for victims in ([os.path.join(runs, n) for n in os.listdir(runs)], [log.version_path(root, 1)]):
        saved = {victim: open(victim, "rb").read() for victim in victims}
        for victim in victims:
            os.unlink(victim)
        for name, read in [("read", lambda: rcfmt.dataset(root).read()),
                           ("count", lambda: rcfmt.dataset(root).count_rows()),
                           ("take", lambda: rcfmt.dataset(root).take([0, 5])),
                           ("filter", lambda: rcfmt.dataset(root).read(filter=rcfmt.col("id") > 3)),
                           ("version", lambda: rcfmt.dataset(root, version=5).read())]:
            _cold()
            with pytest.raises(rcfmt.CorruptFileError, match="one of them is missing"):
                read()
        for victim, data in saved.items():
            with open(victim, "wb") as out:
                out.write(data)
    _cold()
    assert sorted(rcfmt.dataset(root).read().column("id").to_pylist()) == list(range(12))


def test_a_dataset_replaced_at_its_path_is_read_anew_by_a_process_that_read_it_before(tmp_path):
    """A process reads a dataset, which is then replaced at its path (restored from a
    copy, or deleted and written again) by one whose version 2 has the same size but
    other changes: the process reads the new rows. Decoded versions were kept by path
    and size, so version 3's chain took the old version 2 (the old row deleted)."""
    import shutil

    base = pa.table({"id": pa.array(range(40), pa.int64())})
    by_size: dict = {}
    for k in range(40):  # (two datasets whose versions 2 are the same size: sizes fall in a narrow band)
        d = tmp_path / f"c{k}"
        rcfmt.write_dataset(base, d)
        rcfmt.dataset(d).delete(rcfmt.col("id") == k)
        rcfmt.write_dataset(pa.table({"id": pa.array([1000 + k], pa.int64())}), d, mode="append")
        size = os.path.getsize(log.version_path(str(d), 2))
        if size in by_size:
            pair = [by_size[size], k]
            break
        by_size[size] = k
    else:
        pytest.fail("no two versions 2 of the same size")
    root = tmp_path / "R"
    for k in pair:
        if root.exists():
            shutil.rmtree(root)
        shutil.copytree(tmp_path / f"c{k}", root)
        assert changelog.layout_of(rcfmt.dataset(root).snapshot.info) == changelog.CHANGES
        got = sorted(rcfmt.dataset(root).read().column("id").to_pylist())
        assert got == sorted([i for i in range(40) if i != k] + [1000 + k])


@pytest.mark.parametrize("opened", [1, 2], ids=["checkpoint", "changes version"])
def test_a_version_vacuumed_under_an_open_dataset_is_an_rcfmt_error_on_filtered_reads(tmp_path, opened):
    """A Dataset opened at a version that vacuum then removes (its data files still
    there): reads without a filter still work; a filter's statistics, loaded from the
    index file when first needed, are an rcfmt error naming the cause (a raw
    FileNotFoundError before), for read, count_rows and delete."""
    root = str(tmp_path / "d")
    rcfmt.write_dataset(pa.table({"id": pa.array([0, 1], pa.int64())}), root)
    if opened == 2:
        rcfmt.write_dataset(pa.table({"id": pa.array([5], pa.int64())}), root)
    old = rcfmt.dataset(root)
    assert old.version == opened
    rcfmt.write_dataset(pa.table({"id": pa.array([2], pa.int64())}), root)
    rcfmt.dataset(root).checkpoint()
    removed = rcfmt.dataset(root).vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert log.version_path(root, 1) in removed and not os.path.exists(log.version_path(root, opened))
    assert sorted(old.read().column("id").to_pylist()) == [0, 1, 5][:opened + 1]
    for call in (lambda: old.read(filter=rcfmt.col("id") == 1), lambda: old.count_rows(rcfmt.col("id") == 1),
                 lambda: old.delete(rcfmt.col("id") == 1)):
        with pytest.raises(rcfmt.CorruptFileError, match="removed .by vacuum"):
            call()
    assert sorted(rcfmt.dataset(root).read(filter=rcfmt.col("id") >= 1).column("id").to_pylist()) == [1, 2, 5][:opened + 1]


@pytest.mark.parametrize("forgery, match", [
    (lambda i: i.pop("checkpoint"), "checkpoint 'None' is not"),
    (lambda i: i.update(checkpoint=[1]), r"checkpoint '\[1\]' is not"),
    (lambda i: i["checkpoint"].update(version="1"), "checkpoint .* is not"),
    (lambda i: i["checkpoint"].update(files="x"), "checkpoint .* is not"),
    (lambda i: i["checkpoint"].pop("size"), "checkpoint .* is not"),
    (lambda i: i.update(chain_rows="x"), "chain_rows 'x' is not"),
    (lambda i: i.update(runs=5), "malformed runs"),
], ids=["no-checkpoint", "checkpoint-list", "checkpoint-version", "checkpoint-files", "checkpoint-size",
        "chain-rows", "runs"])
def test_a_forged_chain_in_the_info_is_corrupt_for_every_caller(chain, forgery, match):
    """The ``checkpoint``, ``runs`` and ``chain_rows`` of a changes version are checked
    where its info is read: vacuum (which reads the info alone), the next commit (which
    extends the chain) and a read all get the CorruptFileError naming the version."""
    version = log.latest_version(chain)
    _edit_info(chain, version, forgery)
    match = f"dataset index version {version}: malformed dataset metadata: {match}"
    for call in (lambda: rcfmt.dataset.vacuum(chain, 0, dry_run=True),
                 lambda: rcfmt.write_dataset(_batch(99), chain, mode="append"),
                 lambda: rcfmt.dataset(chain).read()):
        _cold()
        with pytest.raises(rcfmt.CorruptFileError, match=match):
            call()


@pytest.mark.parametrize("column", ["num_rows", "size", "num_blocks", "deleted_rows", "dv_size", "id.null_count"])
def test_change_rows_lacking_a_required_index_column_are_corrupt(chain, column):
    """A change's rows lacking a column that has no NULLs (conforming would make it NULL,
    or say every value is NULL) are refused, not read with made-up values."""
    version = log.latest_version(chain)
    edit_version_rows(chain, version, lambda rows: rows.drop([column]))
    with pytest.raises(rcfmt.CorruptFileError,
                       match=rf"dataset index version {version}: .*lack the index columns \['{column}'\]"):
        rcfmt.dataset(chain).read()


def test_a_checkpoint_of_another_size_than_its_entry_says_is_refused(chain):
    version = log.latest_version(chain)
    _edit_info(chain, version, lambda i: i["checkpoint"].update(size=i["checkpoint"]["size"] + 1))
    with pytest.raises(rcfmt.CorruptFileError, match=f"dataset index version {version}: changes version "
                                                     rf"{version} names version \d+ of \d+ bytes as its checkpoint"):
        rcfmt.dataset(chain)


def test_a_changes_version_named_as_a_checkpoint_is_refused_before_its_chain_is_read(tmp_path):
    """Changes versions each naming the one before as their checkpoint are refused at the
    first (a chain of thousands recursed once per version into a RecursionError)."""
    root = str(tmp_path / "d")
    for i in range(3):
        rcfmt.write_dataset(_batch(i), root)
    assert _layout(root, 2) == changelog.CHANGES and _layout(root, 3) == changelog.CHANGES
    _edit_info(root, 3, lambda i: i.update(checkpoint={**i["checkpoint"], "version": 2, "size": os.path.getsize(
        log.version_path(root, 2))}, runs=[], chain_rows=1))
    os.remove(log.version_path(root, 1))  # (version 2's chain: read, it would be missing)
    _cold()
    with pytest.raises(rcfmt.CorruptFileError, match="changes version 3 names version 2 as its checkpoint, which "
                                                     "is not one") as info:
        rcfmt.dataset(root)
    assert "missing" not in str(info.value)
