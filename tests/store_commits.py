"""What every object store that commits datasets must show, run by the S3, GCS and Azure
suites on their own servers: ``names()`` lists the objects under the dataset's root
(store-relative names: ``prefix/...``)."""
from __future__ import annotations

import pyarrow as pa
import pytest

import rcfmt

__all__ = ["check_a_failed_write_leaves_nothing", "check_a_lost_race_rebases_and_an_overwrite_conflicts",
           "check_appends_from_threads_lose_no_row", "check_datasets_written_appended_and_overwritten",
           "check_optimize_and_vacuum", "check_cli_inspects", "check_first_calls_in_a_fresh_interpreter",
           "check_a_file_replaced_while_read_is_an_error", "run_writers_and_a_reader", "check_row_changes"]


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([("id", "ascending")]).select(sorted(t.column_names))


def check_a_failed_write_leaves_nothing(uri: str, table: pa.Table, names) -> None:
    """A write whose source fails midway deletes the data objects it uploaded and
    commits no version."""
    rcfmt.write_dataset(table, uri)
    before = names()

    def batches():
        yield table.slice(0, 3000)
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError, match="source failed"):
        rcfmt.write_dataset(batches(), uri, target_file_rows=1000)
    assert names() == before and rcfmt.dataset(uri).version == 1


def check_a_lost_race_rebases_and_an_overwrite_conflicts(uri: str, table: pa.Table, names, monkeypatch) -> None:
    """Two appends built on version 1: the one that loses the conditional create of
    version 2 on the server re-reads and commits version 3 with both writers' rows; an
    overwrite that lost its base raises CommitConflictError and leaves no data object."""
    from rcfmt.dataset import log, writer as dataset_writer
    from rcfmt.dataset.writer import begin_write, commit

    rcfmt.write_dataset(table.slice(0, 100), uri)
    real_publish, real_close = log.publish_remote_version, dataset_writer.FileSetWriter.close
    publishes = []

    def close_then_commit_meanwhile(self):
        files = real_close(self)  # this writer planned on version 1 and wrote its files ...
        monkeypatch.setattr(dataset_writer.FileSetWriter, "close", real_close)
        rcfmt.write_dataset(table.slice(100, 100), uri)  # ... another writer commits version 2 ...
        return files  # ... which this one has not seen: it tries version 2 too

    def recording(root, version, data):
        publishes.append((version, real_publish(root, version, data)))
        return publishes[-1][1]

    monkeypatch.setattr(dataset_writer.FileSetWriter, "close", close_then_commit_meanwhile)
    monkeypatch.setattr(log, "publish_remote_version", recording)
    ds = rcfmt.write_dataset(table.slice(200, 100), uri)
    assert (2, False) in publishes and publishes[-1] == (3, True)  # refused by the server, then rebased
    assert ds.version == 3 and ds.info["parent_version"] == 2
    assert _sorted(rcfmt.dataset(uri).to_table()).equals(_sorted(table.slice(0, 300)))
    before = names()
    plan = begin_write(uri, table.schema, mode="overwrite")
    rcfmt.write_dataset(table.slice(0, 5), uri)  # version 4 meanwhile
    with pytest.raises(rcfmt.CommitConflictError):
        commit(uri, [], mode="overwrite", read_version=plan.read_version, data_schema=plan.data_schema,
               partitioning=plan.partitioning, txn_id="x")
    assert len(names()) == len(before) + 2  # version 4 and its file; nothing of the loser


def run_writers_and_a_reader(root: str, writers: int, write, read) -> list[int]:
    """``write(w)`` in ``writers`` threads while one thread calls ``read()`` (returning
    the version it saw) until they finish; returns the versions the reader saw, in
    order, after asserting that no thread raised and that they never go back."""
    import threading

    errors, seen = [], []
    stop = threading.Event()

    def guarded(fn, *args):
        try:
            fn(*args)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader():
        while not stop.is_set() and not errors:
            guarded(lambda: seen.append(read()))

    threads = [threading.Thread(target=guarded, args=(write, w)) for w in range(writers)]
    r = threading.Thread(target=reader)
    r.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    r.join()
    assert not errors, errors
    assert seen == sorted(seen)  # a reader never goes back (the versions it finds only grow)
    return seen


def check_appends_from_threads_lose_no_row(uri: str, table: pa.Table, pieces: int, threads: int) -> None:
    """Appends of ``pieces`` slices of 1000 rows from ``threads`` threads at once: every
    version is a complete snapshot and no row is lost (each lost create rebased and
    retried)."""
    from concurrent.futures import ThreadPoolExecutor

    slices = [table.slice(i * 1000, 1000) for i in range(pieces)]
    with ThreadPoolExecutor(threads) as pool:
        versions = list(pool.map(lambda piece: rcfmt.write_dataset(piece, uri).version, slices))
    assert sorted(versions) == list(range(1, pieces + 1))
    assert _sorted(rcfmt.dataset(uri).to_table()).equals(_sorted(table.slice(0, pieces * 1000)))


def check_datasets_written_appended_and_overwritten(uri: str, table: pa.Table, names, prefix: str,
                                                   other_spellings=()) -> None:
    """write_dataset to ``uri`` (objects named ``prefix/...``): partitioned data files
    straight to their names, each version committed by a conditional create; filters
    prune; time travel reads older versions; nothing is staged or left over. ``table``
    has 12,000 rows of ``id``, ``x``, ``p`` (id % 3) and ``s``."""
    n = table.num_rows
    assert rcfmt.write_dataset(table.slice(0, 8000), uri, partition_by="p", target_file_rows=2000).version == 1
    ds = rcfmt.write_dataset(table.slice(8000), uri, mode="append")
    assert ds.version == 2 and ds.num_rows == n
    assert _sorted(rcfmt.dataset(uri).to_table()).equals(_sorted(table))
    scan = rcfmt.dataset(uri).scan(filter=(rcfmt.col("id") >= 100) & (rcfmt.col("id") < 130) & (rcfmt.col("p") == 1))
    assert sorted(scan.read().column("id").to_pylist()) == [i for i in range(100, 130) if i % 3 == 1]
    assert scan.stats.files_pruned > 0
    listed = names()
    assert [k for k in listed if "_rcfmt/" in k] == [f"{prefix}/_rcfmt/_last_version",  # the version hint
                                                    f"{prefix}/_rcfmt/v00000000000000000001.rcfmt",
                                                    f"{prefix}/_rcfmt/v00000000000000000002.rcfmt"]
    assert all(k.startswith(f"{prefix}/p=") or "_rcfmt/v" in k or k.endswith("_rcfmt/_last_version")
               for k in listed), listed
    ds = rcfmt.write_dataset(table.slice(0, 10), uri, mode="overwrite")
    assert ds.version == 3 and _sorted(rcfmt.dataset(uri).to_table()).equals(_sorted(table.slice(0, 10)))
    assert rcfmt.dataset(uri, version=2).num_rows == n
    for other in other_spellings:
        assert rcfmt.dataset(other, version=2).num_rows == n


def check_optimize_and_vacuum(uri: str, table: pa.Table, names, prefix: str, put_foreign, other_spellings=()) -> None:
    """optimize rewrites and commits by a conditional create; vacuum then removes the
    replaced files and old versions, and keeps what the latest version reads and what
    is not rcfmt's (``put_foreign(name, bytes)`` stores ``prefix/notes.txt``)."""
    from rcfmt.dataset import vacuum

    for k in range(3):
        rcfmt.write_dataset(table.slice(k * 4000, 4000), uri)
    put_foreign(f"{prefix}/notes.txt", b"not ours")
    ds = rcfmt.dataset(uri).optimize(["x"], target_file_rows=6000)
    assert ds.version == 4 and ds.num_files == 2
    assert _sorted(ds.to_table()).equals(_sorted(table))
    assert vacuum(uri) == [] and all(vacuum(o) == [] for o in other_spellings)  # all younger than the retention
    removed = vacuum(uri, retention_seconds=0, enforce_retention_duration=False)
    assert len([r for r in removed if "/_rcfmt/" not in r]) == 3 and len(removed) == 3 + 3
    left = names()
    assert f"{prefix}/notes.txt" in left and len([k for k in left if k.endswith(".rcfmt")]) == 2 + 1, left
    assert _sorted(rcfmt.dataset(uri).to_table()).equals(_sorted(table))


def check_vacuum_keeps_escaped_partition_values(uri: str, names, prefix: str) -> None:
    """Partition values that directory names escape (``/``, ``:``, ``%``: ``p=a%2Fb`` in
    the index) are objects under their decoded keys (``p=a/b/...``): vacuum matches the
    listing against the index by key, so it removes exactly the files an overwrite
    replaced and keeps every file the latest version reads; values a URI reads
    specially (``#``, ``?``) or that a strict URI parser refuses raw (a space, non-ASCII
    text) are written, read and deleted too."""
    from urllib.parse import unquote

    from rcfmt.dataset import vacuum

    values = ["plain", "a/b", "x:y", "100%", "a%2Fb", "c#d", "a?b", "g h", "é日本", "a/_b", "a/.c/_d"]
    n = len(values) + 1  # (and a partition only the first version has: its prefix is left empty)
    first = pa.table({"id": pa.array(range(n), pa.int64()), "p": values + ["old"]})
    second = pa.table({"id": pa.array(range(n, 2 * n), pa.int64()), "p": values + ["new"]})
    rcfmt.write_dataset(first, uri, partition_by="p")
    rcfmt.write_dataset(second, uri, partition_by="p", mode="overwrite")
    before = [k for k in names() if k.endswith(".rcfmt") and "/_rcfmt/" not in k]
    assert len(before) == 2 * n, before
    removed = vacuum(uri, retention_seconds=0, enforce_retention_duration=False)
    data_removed = [r for r in removed if "/_rcfmt/" not in r]
    assert len(data_removed) == n, removed
    after = [k for k in names() if k.endswith(".rcfmt") and "/_rcfmt/" not in k]
    assert len(after) == n and set(before) - set(after) == {f"{prefix}/{unquote(r[len(uri) + 1:])}" for r in data_removed}
    assert _sorted(rcfmt.dataset(uri).to_table()).equals(_sorted(second))
    assert vacuum(uri, retention_seconds=0, enforce_retention_duration=False) == []
    # a user's dataset kept in a hidden directory of a partition is not the outer one's:
    # its writer-named files stay (a hidden segment counts as a value's only in a
    # directory the outer dataset's files are in)
    nested = f"{uri}/p=plain/_archive"
    rcfmt.write_dataset(pa.table({"id": pa.array([7], pa.int64())}), nested)
    assert [r for r in vacuum(uri, retention_seconds=0, enforce_retention_duration=False) if "_archive" in r] == []
    assert rcfmt.dataset(nested).to_table()["id"].to_pylist() == [7]
    assert not [k for k in names() if k.endswith("/")]  # (no "directory" object made by a delete)
    # a value whose decoded key holds a '.' or '..' segment, which HTTP clients resolve (the
    # file went elsewhere and vacuum deleted it as a stray), and a root holding '#' (a URI
    # fragment: every object landed on one key) are refused before anything is committed
    version = rcfmt.dataset(uri).version
    for bad in ("a/..", "a/./b"):
        with pytest.raises(rcfmt.InvalidOptionError, match="'.' or '..' segment"):
            rcfmt.write_dataset(pa.table({"id": pa.array([99], pa.int64()), "p": [bad]}), uri, partition_by="p")
    assert rcfmt.dataset(uri).version == version and len(names()) == len(set(names()))
    with pytest.raises(rcfmt.InvalidOptionError, match="fragment"):
        rcfmt.write_dataset(first, uri + "#x", partition_by="p")


def check_cli_inspects(dataset_uri: str, file_uri: str, table: pa.Table) -> None:
    """``rcfmt inspect`` of a partitioned dataset and of a file at these URIs, in a new
    process that finds the store as users' do (the environment)."""
    import os
    import subprocess
    import sys

    rcfmt.write_dataset(table, dataset_uri, partition_by="p")
    rcfmt.write_table(table, file_uri)
    for target, expected in ((dataset_uri, "partitioned by: p"), (file_uri, str(table.num_rows))):
        proc = subprocess.run([sys.executable, "-m", "rcfmt.cli", "inspect", target], capture_output=True,
                              text=True, timeout=120, env=dict(os.environ))
        assert proc.returncode == 0, proc.stderr
        assert expected in proc.stdout.replace(",", "")


_FRESH = r"""
uri = sys.argv[1]
import pyarrow as pa
t = rcfmt.read_table(uri)
exprs = [rcfmt.col("id") < 50, rcfmt.col("s") == "name-7", rcfmt.col("x") < 0.01]
# a new interpreter's first calls, at once: the store's clients (made per thread, or
# shared), the fetch pool -- scans of one file beside appends racing to commit
calls = [lambda e=e: rcfmt.read_table(uri, filter=e) for e in exprs]
calls += [lambda k=k: rcfmt.write_dataset(t.slice(k * 100, 100), uri.rsplit("/", 1)[0] + "/ds").version
          for k in range(3)]
results = race(calls)
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(rcfmt.__file__))), "tests"))
from oracle_filter import filter_table  # the independent oracle (after the race: not among the first calls)
for k, e in enumerate(exprs):
    assert results[k].equals(filter_table(t, e)), k
assert sorted(results[3:]) == [1, 2, 3], results[3:]
assert rcfmt.dataset(uri.rsplit("/", 1)[0] + "/ds").num_rows == 300
print("OK")
"""


def check_first_calls_in_a_fresh_interpreter(file_uri: str, table: pa.Table) -> None:
    """A user's first calls, at once from six threads of a new process: three filtered
    reads of the file and three appends to one dataset beside it; the reads equal the
    brute-force filter and every append commits a version of its own."""
    from storage.test_object_storage import _run_fresh

    rcfmt.write_table(table, file_uri, block_rows=2048, page_rows=256)
    _run_fresh(_FRESH, file_uri)


def check_a_file_replaced_while_read_is_an_error(uri: str, message: str) -> None:
    """Reads are pinned to the version the open saw (an ETag, a generation): after the
    file is replaced, the next read that goes to the server fails with a StorageError
    matching ``message`` instead of returning the new bytes; a new open reads the new file."""
    import numpy as np

    n = 320_000
    t = pa.table({"k": np.arange(n), "v": np.random.default_rng(14).random(n)})
    rcfmt.write_table(t, uri, block_rows=32_768, compression="none")
    with rcfmt.open(uri) as f:
        rcfmt.write_table(t.slice(0, n // 2), uri, block_rows=32_768, compression="none")
        with pytest.raises(rcfmt.StorageError, match=message):
            f.read(columns=["v"])
    assert rcfmt.read_table(uri).num_rows == n // 2


def check_row_changes(uri: str, table: pa.Table, names, prefix: str) -> None:
    """Deletes, an update and a merge on the store: vectors too big to inline go to one
    deletion object per commit, uploaded before the version's conditional create; every
    read applies them; optimize drops them and vacuum removes the deletion objects no
    kept version names. ``table`` has an int64 ``id`` 0..n-1."""
    import time

    import numpy as np

    n = table.num_rows
    ds = rcfmt.write_dataset(table.select(["id", "x"]), uri, target_file_rows=5000)
    ds = ds.delete(rcfmt.col("id").isin(list(range(0, n, 3))))
    dv = [k for k in names() if k.startswith(f"{prefix}/_rcfmt/deletions/")]
    assert len(dv) == 1 and dv[0].endswith(".rcdv"), dv
    left = np.arange(n)[np.arange(n) % 3 != 0]
    again = rcfmt.dataset(uri)
    assert again.num_rows == len(left) == again.count_rows()
    assert sorted(again.read(["id"]).column("id").to_pylist()) == left.tolist()
    assert again.take([0, 1, len(left) - 1]).column("id").to_pylist() == [left[0], left[1], left[-1]]
    ds = again.update(rcfmt.col("id") == 1, {"id": -1})
    ds = ds.merge(pa.table({"id": pa.array([2, 10 ** 9], table.schema.field("id").type)}), on="id",
                  when_matched="delete", when_not_matched="insert")
    got = sorted(rcfmt.dataset(uri).read(["id"]).column("id").to_pylist())
    assert got == sorted([-1, 10 ** 9] + [int(i) for i in left if i not in (1, 2)])
    assert [h["operation"] for h in ds.history()][-3:] == ["delete", "update", "merge"]
    ds = ds.optimize(deleted_threshold=0.0)
    assert ds.num_deleted_rows == 0 and ds.num_rows == len(got)
    time.sleep(1.1)  # (object modification times have a resolution of a second)
    ds.vacuum(retention_seconds=0, enforce_retention_duration=False)
    assert [k for k in names() if k.startswith(f"{prefix}/_rcfmt/deletions/")] == []
    assert sorted(rcfmt.dataset(uri).read(["id"]).column("id").to_pylist()) == got
